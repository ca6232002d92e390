"""Running a fanout step in engine mode: each item's stages run through the agent (in
its own git worktree under `isolation: worktree`), each finished item is committed to
the run as its own transition, then `require` is settled and, for worktrees, the
items' changes are merged back in item order (all or nothing)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from strato.flow.expr.values import deep_equal
from strato.flow.refs import RefSyntaxError, Scope, Unresolved, render_task
from strato.flow.spec import FanoutStep, Spec, Stage
from strato.runs import dispatches
from strato.runs.agents import (
    READ_ONLY,
    WORKTREE_WRITE,
    AgentsConfig,
    agent_prompt,
    call,
    last_line,
    run_process,
)
from strato.runs.budgets import overspent, task_ledgers
from strato.runs.checks import DEFAULT_ATTEMPTS, Judge, check
from strato.runs.consumer import require_failure, stage_when
from strato.runs.engine import Engine
from strato.runs.fanout_steps import FanoutOutcome
from strato.runs.ledger import Ledger
from strato.runs.state import Refused, new_token
from strato.runs.store import Outcome, Snapshot
from tropo.git import worktrees
from tropo.git.types import Repository, oid

PRE_MERGE_TIMEOUT_S = 900


class RunAccess(Protocol):
    """What a fanout needs of the workspace's runs (`strato.runs.service.Runs` is
    one): the service drives fanouts, so this module names only the part it uses."""

    repo: Repository
    root: Path

    @property
    def config(self) -> AgentsConfig: ...

    @property
    def pacing_dir(self) -> Path: ...

    def load(self, run_id: str) -> Snapshot: ...

    def engine(self, snap: Snapshot, judge: bool = True) -> Engine: ...

    def apply(self, run_id: str, op: str, action: Callable[[Engine], None], **detail: Any) -> Outcome: ...


class _Allowance:
    """The fanout's view of its ledgers while items run, shared by the worker threads:
    each agent call reserves one dispatch and settles its usage here, so an item is
    refused once any ledger (flow, subflow, the fanout's own) is spent."""

    def __init__(self, ledgers: list[Ledger]) -> None:
        self.ledgers = [Ledger(lg.level, lg.budget, dict(lg.spent)) for lg in ledgers]
        self.closed = False
        self.lock = threading.Lock()

    def take(self) -> str | None:
        """Reserve one dispatch; the refusal reason if a ledger would go over."""
        with self.lock:
            if self.closed:
                return "fanout stopped"
            for ledger in self.ledgers:
                keys = ledger.blocking({"dispatches": 1})
                if keys:
                    return f"{ledger.level} budget exhausted ({', '.join(keys)})"
            for ledger in self.ledgers:
                ledger.debit({"dispatches": 1})
            return None

    def settle(self, usage: dict[str, float]) -> None:
        with self.lock:
            for ledger in self.ledgers:
                ledger.debit(usage)


def run_fanout(runs: RunAccess, run_id: str, path: str) -> Outcome:
    snap = runs.load(run_id)
    eng = runs.engine(snap)
    frame, step, st = eng.locate(path)
    assert isinstance(step, FanoutStep)
    allowance = _Allowance(task_ledgers(frame, step, st))
    scope = eng.scope_for(frame)
    pending = [it for it in st["fanout"]["items"] if it["status"] == "pending"]
    worker = _ItemRunner(runs, eng.spec, step, scope, run_id, allowance, eng.judge)
    with ThreadPoolExecutor(max_workers=max(1, min(step.fanout.concurrency, len(pending) or 1))) as pool:
        for item in pool.map(worker.run, pending):
            if allowance.closed:
                continue  # the step or run ended while this item ran: drop its result
            record: Callable[[Engine], None] = partial(record_item, path=path, item=item)
            try:
                runs.apply(run_id, "fanout_item", record, stepId=path, item=item["index"])
            except Refused:
                allowance.closed = True
    checks = _pre_merge(runs, run_id, path)
    try:
        return runs.apply(run_id, "fanout_settle", lambda e: settle(runs, e, path, checks), stepId=path)
    except Refused:  # a budget breach already ended the step or the run
        return Outcome(runs.load(run_id), [])


def record_item(eng: Engine, path: str, item: dict[str, Any]) -> None:
    eng.require_running()
    frame, step, st = eng.locate(path)
    if st["status"] != "running":
        raise Refused("fanout_not_running", f"fanout {path} is not running")
    ledgers = task_ledgers(frame, step, st)
    calls = item.get("calls", [])  # the same item comes again if the ref moved: read only
    for ledger in ledgers:
        ledger.debit({"dispatches": len(calls)})
    for made in calls:
        _record_call(eng, path, step, st["epoch"], item["index"], made, ledgers)
    st["fanout"]["items"][item["index"]] = {k: v for k, v in item.items() if k != "calls"}
    eng.emit(
        "fanout_item_done", path, index=item["index"], status=item["status"], failure=item.get("failure")
    )
    if overspent(eng, frame, step, st, ledgers):
        eng.advance()


def _record_call(
    eng: Engine,
    path: str,
    step: Any,
    epoch: int,
    index: int,
    made: dict[str, Any],
    ledgers: list[Ledger],
) -> None:
    """One agent call of an item: a dispatch of its own, its usage debited once, and
    the sandbox it was given when its agent's argv takes one."""
    record = {
        "stepId": path,
        "attempt": made["attempt"],
        "epoch": epoch,
        "item": {"itemIndex": index, "stage": made["stage"]},
    }
    contract = dispatches.contract_digest(eng.spec, step, made["stage"])
    dispatch_id = dispatches.issue(eng, record, contract, made["inputs"], dispatch_id=made["dispatchId"])
    dispatches.debit(eng, dispatch_id, made["usage"], made["telemetry"], "engine", ledgers)
    if made.get("sandbox"):
        eng.emit(
            "sandbox_policy",
            path,
            attempt=made["attempt"],
            itemIndex=index,
            stage=made["stage"],
            policy={"sandbox": made["sandbox"]},
            provenance={"source": f"fanout isolation: {step.fanout.isolation}"},
        )


@dataclass(frozen=True)
class PreMerge:
    """The `pre_merge` commands that ran and the first one that failed, if any."""

    ran: list[str]
    failure: str | None


def _pre_merge(runs: RunAccess, run_id: str, path: str) -> PreMerge:
    """Run the step's `pre_merge` commands (`sh -lc` in the workspace root, in order,
    stopping at the first failure) when there is a worktree merge to do. They run
    outside the transition, so a lost race on the ref cannot run them twice."""
    eng = runs.engine(runs.load(run_id), judge=False)
    _frame, step, st = eng.locate(path)
    assert isinstance(step, FanoutStep)
    items = st["fanout"]["items"]
    merging = st["status"] == "running" and step.fanout.isolation == "worktree"
    commands = step.fanout.pre_merge or []
    if not merging or require_failure(step, items) is not None:
        commands = []
    ran: list[str] = []
    for command in commands:
        ran.append(command)
        done = run_process(["sh", "-lc", command], runs.root, PRE_MERGE_TIMEOUT_S)
        if isinstance(done, str):
            return PreMerge(ran, f"pre_merge {command!r} cannot start: {done}")
        if done.returncode != 0:
            how = "timed out" if done.returncode is None else f"exited {done.returncode}"
            tail = last_line(done.stderr_tail or done.stdout)
            return PreMerge(ran, f"pre_merge {command!r} {how}: {tail}".rstrip(": "))
    return PreMerge(ran, None)


def settle(runs: RunAccess, eng: Engine, path: str, checks: PreMerge) -> None:
    eng.require_running()
    _frame, step, st = eng.locate(path)
    assert isinstance(step, FanoutStep)
    if st["status"] != "running":
        raise Refused("fanout_not_running", f"fanout {path} is not running")
    items = st["fanout"]["items"]
    ok = [it for it in items if it["status"] == "succeeded"]
    failure = require_failure(step, items)
    if failure is None and step.fanout.isolation == "worktree":
        if checks.ran:
            eng.emit("fanout_pre_merge", path, commands=checks.ran, failure=checks.failure)
        base = next((it["base"] for it in ok if "base" in it), None)
        trees = [it["tree"] for it in ok if "tree" in it]
        try:
            if checks.failure is not None:
                failure = f"fanout pre_merge failed: {checks.failure}"
            elif base and trees:
                changed = worktrees.merge_sequential(
                    runs.repo, oid(base), [oid(t) for t in trees]
                )
                eng.emit("fanout_merge", path, items=[it["index"] for it in ok], files=changed)
        except worktrees.WorktreeError as exc:
            failure = f"fanout merge failed: {exc}"
    eng.finish_fanout(path, FanoutOutcome(items, failure))


class _ItemRunner:
    def __init__(
        self,
        runs: RunAccess,
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
        out = {"index": item["index"], "item": item["item"], "attempts": [], "calls": []}
        if self.step.fanout.isolation == "none":
            return self._stages(out, self.runs.root, READ_ONLY)
        try:
            wt = worktrees.add(self.runs.repo, self.run_id, f"{self.step.id}-{item['index']}")
        except worktrees.WorktreeError as exc:
            return {**out, "status": "failed", "failure": str(exc), "failureKind": "worktree"}
        try:
            result = self._stages(out, wt.path, WORKTREE_WRITE)
            if result["status"] == "succeeded":
                result["tree"] = str(worktrees.snapshot(wt))
                result["base"] = str(wt.base)
            return result
        finally:
            worktrees.remove(self.runs.repo, wt)

    def _stages(self, out: dict[str, Any], cwd: Path, sandbox: str) -> dict[str, Any]:
        prev: Any = None
        stages = self.step.fanout.steps
        for i, stage in enumerate(stages):
            scope = Scope(self.scope.input, self.scope.outputs, self.scope.carry, out["item"], prev, True)
            bindings = {"input": scope.input, "item": out["item"], "prev": prev}
            if stage.when is not None and not stage_when(stage.when, scope, bindings, cwd):
                if i == len(stages) - 1:
                    return {**out, "status": "skipped"}
                continue
            ok, value = self._attempts(out, i, stage, scope, bindings, cwd, sandbox)
            if not ok:
                return {**out, "status": "failed", "failure": value}
            prev = value
        return {**out, "status": "succeeded", "output": prev}

    def _attempts(
        self,
        out: dict[str, Any],
        i: int,
        stage: Stage,
        scope: Scope,
        bindings: dict[str, Any],
        cwd: Path,
        sandbox: str,
    ) -> tuple[bool, Any]:
        limit = stage.attempts or self.step.attempts or DEFAULT_ATTEMPTS
        previous: dict[str, Any] | None = None
        last: Any = None
        for n in range(1, limit + 1):
            try:
                task = render_task(stage.do, scope)
            except (Unresolved, RefSyntaxError) as exc:
                return False, f"stage {i}: render failed: {exc}"
            refused = self.allowance.take()
            if refused is not None:
                return False, f"stage {i}: {refused}"
            entry = {
                "do": task,
                "contract": self.spec.contracts.get(stage.out or "", {}),
                "previousFailure": previous,
            }
            agent = self.runs.config.get(stage.agent)
            res = call(agent, agent_prompt(entry), cwd, self.runs.pacing_dir, sandbox=sandbox)
            spend = {**res.usage, "ms": res.duration_ms}
            self.allowance.settle(spend)
            out["calls"].append(
                {
                    "dispatchId": new_token(),
                    "stage": i,
                    "attempt": n,
                    "usage": spend,
                    "telemetry": dispatches.engine_telemetry(stage.agent, res.duration_ms),
                    "inputs": dispatches.inputs_digest(task, out["item"], bindings["prev"]),
                    **({"sandbox": sandbox} if "{sandbox}" in agent.argv else {}),
                }
            )
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
