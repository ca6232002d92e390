"""Running a fanout step in engine mode: each item's stages run through the agent (in
its own git worktree under `isolation: worktree`), each finished item is committed to
the run as its own transition, then `require` is settled and, for worktrees, the
items' changes are merged back in item order (all or nothing)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from strato.flow.expr import ExprError, evaluate
from strato.flow.expr.values import deep_equal
from strato.flow.refs import RefSyntaxError, Scope, Unresolved, render_task
from strato.flow.spec import FanoutStep, Spec, Stage
from strato.runs.agents import agent_prompt, call
from strato.runs.checks import Judge, check
from strato.runs.engine import DEFAULT_ATTEMPTS, Engine, FanoutOutcome, Refused, require_met
from strato.runs.ledger import Ledger
from tropo import worktrees

if TYPE_CHECKING:
    from strato.runs.service import Outcome, Runs


class _Allowance:
    """Dispatches the fanout may still reserve, shared by the worker threads."""

    def __init__(self, ledgers: list[Ledger]) -> None:
        limits = [
            lg.limits()["dispatches"] - lg.spent.get("dispatches", 0)
            for lg in ledgers
            if "dispatches" in lg.limits()
        ]
        self.left = min(limits) if limits else None
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            if self.left is None:
                return True
            if self.left < 1:
                return False
            self.left -= 1
            return True


def run_fanout(runs: Runs, run_id: str, path: str) -> Outcome:
    snap = runs.load(run_id)
    eng = runs.engine(snap)
    frame, step, st = eng.locate(path)
    assert isinstance(step, FanoutStep)
    ledgers = [*frame.ledgers, Ledger("task", step.budget, st["spent"])]
    allowance = _Allowance(ledgers)
    scope = eng.scope_for(frame)
    pending = [it for it in st["fanout"]["items"] if it["status"] == "pending"]
    worker = _ItemRunner(runs, eng.spec, step, scope, run_id, allowance, eng.judge)
    with ThreadPoolExecutor(max_workers=max(1, min(step.fanout.concurrency, len(pending) or 1))) as pool:
        for item in pool.map(worker.run, pending):
            record: Callable[[Engine], None] = partial(record_item, path=path, item=item)
            runs.apply(
                run_id,
                "fanout_item",
                record,
                stepId=path,
                item=item["index"],
            )
    return runs.apply(run_id, "fanout_settle", lambda e: settle(runs, e, path), stepId=path)


def record_item(eng: Engine, path: str, item: dict[str, Any]) -> None:
    eng.require_running()
    frame, step, st = eng.locate(path)
    if st["status"] != "running":
        raise Refused("fanout_not_running", f"fanout {path} is not running")
    ledgers = [*frame.ledgers, Ledger("task", getattr(step, "budget", None), st["spent"])]
    for ledger in ledgers:
        ledger.debit(item.pop("usage", {}))
    st["fanout"]["items"][item["index"]] = item
    eng.emit(
        "fanout_item_done", path, index=item["index"], status=item["status"], failure=item.get("failure")
    )
    if ledgers[0].over():
        eng.breach(frame, step, st, ledgers[0])


def settle(runs: Runs, eng: Engine, path: str) -> None:
    eng.require_running()
    _frame, step, st = eng.locate(path)
    assert isinstance(step, FanoutStep)
    items = st["fanout"]["items"]
    ok = [it for it in items if it["status"] == "succeeded"]
    failure = None
    if not require_met(step.fanout.require, len(ok), len(items)):
        failure = f"fanout require {step.fanout.require} not met ({len(ok)}/{len(items)} succeeded)"
    elif step.fanout.isolation == "worktree":
        base = next((it["base"] for it in ok if "base" in it), None)
        trees = [it["tree"] for it in ok if "tree" in it]
        try:
            if base and trees:
                changed = worktrees.merge_sequential(
                    runs.repo, pygit2.Oid(hex=base), [pygit2.Oid(hex=t) for t in trees]
                )
                eng.emit("fanout_merge", path, items=[it["index"] for it in ok], files=changed)
        except worktrees.WorktreeError as exc:
            failure = f"fanout merge failed: {exc}"
    eng.finish_fanout(path, FanoutOutcome(items, failure))


class _ItemRunner:
    def __init__(
        self,
        runs: Runs,
        spec: Spec,
        step: FanoutStep,
        scope: Scope,
        run_id: str,
        allowance: _Allowance,
        judge: Judge | None,
    ) -> None:
        self.runs, self.spec, self.step, self.scope = runs, spec, step, scope
        self.run_id, self.allowance, self.judge = run_id, allowance, judge

    def run(self, item: dict[str, Any]) -> dict[str, Any]:
        out = {"index": item["index"], "item": item["item"], "attempts": [], "usage": {}}
        if self.step.fanout.isolation == "none":
            return self._stages(out, self.runs.root)
        try:
            wt = worktrees.add(self.runs.repo, self.run_id, f"{self.step.id}-{item['index']}")
        except worktrees.WorktreeError as exc:
            return {**out, "status": "failed", "failure": str(exc), "failureKind": "worktree"}
        try:
            result = self._stages(out, wt.path)
            if result["status"] == "succeeded":
                result["tree"] = str(worktrees.snapshot(wt))
                result["base"] = str(wt.base)
            return result
        finally:
            worktrees.remove(self.runs.repo, wt)

    def _stages(self, out: dict[str, Any], cwd: Path) -> dict[str, Any]:
        prev: Any = None
        stages = self.step.fanout.steps
        for i, stage in enumerate(stages):
            scope = Scope(self.scope.input, self.scope.outputs, self.scope.carry, out["item"], prev, True)
            bindings = {"input": scope.input, "item": out["item"], "prev": prev}
            if stage.when is not None and not self._when(stage.when, scope, bindings, cwd):
                if i == len(stages) - 1:
                    return {**out, "status": "skipped"}
                continue
            ok, value = self._attempts(out, i, stage, scope, bindings, cwd)
            if not ok:
                return {**out, "status": "failed", "failure": value}
            prev = value
        return {**out, "status": "succeeded", "output": prev}

    def _when(self, expr: str, scope: Scope, bindings: dict[str, Any], cwd: Path) -> bool:
        try:
            return evaluate(expr, {**bindings, "result": scope.outputs}, cwd) is True
        except ExprError:
            return False

    def _attempts(
        self, out: dict[str, Any], i: int, stage: Stage, scope: Scope, bindings: dict[str, Any], cwd: Path
    ) -> tuple[bool, Any]:
        limit = stage.attempts or self.step.attempts or DEFAULT_ATTEMPTS
        previous: dict[str, Any] | None = None
        last: Any = None
        for n in range(1, limit + 1):
            try:
                task = render_task(stage.do, scope)
            except (Unresolved, RefSyntaxError) as exc:
                return False, f"stage {i}: render failed: {exc}"
            if not self.allowance.take():
                return False, f"stage {i}: budget exhausted (dispatches)"
            entry = {
                "do": task,
                "contract": self.spec.contracts.get(stage.out or "", {}),
                "previousFailure": previous,
            }
            res = call(self.runs.config.get(stage.agent), agent_prompt(entry), cwd, self.runs.pacing_dir)
            for k, v in {**res.usage, "ms": res.duration_ms, "dispatches": 1}.items():
                out["usage"][k] = out["usage"].get(k, 0) + v
            reason = res.failure
            if reason is None:
                verdict = check(
                    self.spec, stage.out, stage.ensure, res.output, bindings, scope, cwd, self.judge
                )
                reason = verdict.reason
            out["attempts"].append({"stage": i, "attempt": n, "result": res.output, "failure": reason})
            if reason is None:
                return True, res.output
            if n > 1 and res.output is not None and deep_equal(res.output, last):
                return False, f"stage {i}: {reason} (no retry: identical evidence)"
            last, previous = res.output, {"attempt": n, "reason": reason}
        return False, f"stage {i}: {previous['reason'] if previous else 'failed'}"
