"""Running a fanout step in engine mode: each item's stages run through the agent (in
its own git worktree under `isolation: worktree`), each finished item is committed to
the run as its own transition, then `require` is settled and, for worktrees, the
items' changes are merged back in item order (all or nothing: `merge.py`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from strato.agents.calls import CallResult, agent_not_found, agent_prompt, call
from strato.agents.config import READ_ONLY, WORKTREE_WRITE, AgentSpec
from strato.flow.expr.values import deep_equal
from strato.flow.refs import RefSyntaxError, Scope, Unresolved, render_task
from strato.flow.spec import FanoutStep, Spec, Stage
from strato.runs.dispatch import agentgroups
from strato.runs.dispatch.access import RunAccess
from strato.runs.dispatch.merge import settle_fanout
from strato.runs.engine import bounds, dispatches
from strato.runs.engine.budgets import overspent, task_ledgers
from strato.runs.engine.checks import DEFAULT_ATTEMPTS, Judge, check
from strato.runs.engine.consumer import stage_when
from strato.runs.engine.ledger import Ledger
from strato.runs.engine.machine import Engine
from strato.runs.engine.state import Refused, new_token
from strato.runs.engine.verification import ItemLanes, learn
from strato.runs.store import Outcome
from tropo.git import worktrees
from tropo.git.objects import commit_tree

ItemCall = Callable[[str, AgentSpec, str, Path, str], CallResult]
"""How an item's agent is called: (key, agent, prompt, cwd, sandbox). The key names the call in
its fanout (`<index>.<stage>.<attempt>`) and is the same when the fanout runs again, so
a background runner can hand back a call that a runner before it made."""


class BudgetRefused(Refused):
    """The run's ledgers refuse an item's dispatch as its head records them: the item
    fails as it does when its runner's allowance refuses. Only a runner that does not
    see every reservation (a worker on another clone) meets it; its `reason` is the
    allowance's."""

    def __init__(self, reason: str) -> None:
        super().__init__("budget_exhausted", reason)
        self.reason = reason


def blocked(ledgers: list[Ledger]) -> str | None:
    """Why one more dispatch may not be reserved against ``ledgers`` (None: it may)."""
    for ledger in ledgers:
        keys = ledger.blocking(dispatches.RESERVED)
        if keys:
            return f"{ledger.level} budget exhausted ({', '.join(keys)})"
    return None


def limited(ledgers: list[Ledger]) -> bool:
    """Whether any of a fanout's ledgers has a limit (its dispatches must then be
    reserved where every reservation is seen: the run head)."""
    return any(ledger.limits() for ledger in ledgers)


class _Allowance:
    """The fanout's view of its ledgers while items run, shared by the worker threads:
    each agent call reserves one dispatch and settles its usage here, so an item is
    refused once any ledger (flow, subflow, the fanout's own) is spent. A call whose
    dispatch the run already records (a runner before this one started it) reserved
    its dispatch then."""

    def __init__(self, ledgers: list[Ledger], dispatched: list[str]) -> None:
        self.ledgers = [Ledger(lg.level, lg.budget, dict(lg.spent)) for lg in ledgers]
        self.dispatched = frozenset(dispatched)
        self.closed = False
        self.lock = threading.Lock()

    def take(self, key: str) -> str | None:
        """Reserve one dispatch for call `key`; the refusal reason if a ledger would go over."""
        with self.lock:
            if self.closed:
                return "fanout stopped"
            if key in self.dispatched:
                return None
            refused = blocked(self.ledgers)
            if refused is None:
                for ledger in self.ledgers:
                    ledger.debit(dispatches.RESERVED)
            return refused

    def settle(self, usage: dict[str, float]) -> None:
        with self.lock:
            for ledger in self.ledgers:
                ledger.debit(usage)


def run_fanout(runs: RunAccess, run_id: str, path: str, call_item: ItemCall | None = None) -> Outcome:
    """Run the fanout's pending items and settle it. An exception `call_item` raises
    (a background run's cancel) ends the fanout there: no item is recorded after it.
    Refused (`untrusted`) before any item when one of its agents is not approved here."""
    worker, step, pending = item_runner(runs, run_id, path, call_item)
    with ThreadPoolExecutor(max_workers=max(1, min(step.fanout.concurrency, len(pending) or 1))) as pool:
        list(pool.map(worker.run, pending))
    return settle_fanout(runs, run_id, path)


def item_runner(
    runs: RunAccess, run_id: str, path: str, call_item: ItemCall | None = None
) -> tuple[_ItemRunner, FanoutStep, list[dict[str, Any]]]:
    """What runs the fanout's items (`.run(item)` runs and records one), its step and
    its pending items, as the run stands now; Refused (`untrusted`) when one of its
    agents is not approved here. A worker on another clone runs items one by one with it."""
    snap = runs.load(run_id)
    runs.preflight(snap)
    eng = runs.engine(snap)
    frame, step, st = eng.locate(path)
    assert isinstance(step, FanoutStep)
    allowance = _Allowance(task_ledgers(frame, step, st), st["fanout"].get("dispatched", []))
    pending = [it for it in st["fanout"]["items"] if it["status"] == "pending"]
    lanes = None if eng.lanes is None else ItemLanes(eng, frame, step)
    settled = dict(st["fanout"].get("settled", {}))
    scope = eng.scope_for(frame)
    worker = _ItemRunner(
        runs, eng.spec, step, path, scope, run_id, allowance, eng.judge, lanes, settled, call_item
    )
    return worker, step, pending


def _running_fanout(eng: Engine, path: str) -> tuple[Any, FanoutStep, dict[str, Any]]:
    eng.require_running()
    frame, step, st = eng.locate(path)
    if st["status"] != "running":
        raise Refused("fanout_not_running", f"fanout {path} is not running")
    assert isinstance(step, FanoutStep)
    return frame, step, st


def record_dispatch(eng: Engine, path: str, index: int, stage: int, attempt: int) -> bool:
    """An item's agent call is about to start: its dispatch reserved in every ledger and
    recorded before the agent runs, once (False: a runner before this one recorded it,
    and this one is handing back what that call gave). BudgetRefused when the run's
    ledgers would go over: reservations decided on one head are ordered by it, so
    runners on many clones together never reserve past a limit."""
    frame, step, st = _running_fanout(eng, path)
    key = f"{index}.{stage}.{attempt}"
    seen: list[str] = st["fanout"].setdefault("dispatched", [])
    if key in seen:
        return False
    ledgers = task_ledgers(frame, step, st)
    refused = blocked(ledgers)
    if refused is not None:
        raise BudgetRefused(refused)
    seen.append(key)
    for ledger in ledgers:
        ledger.debit(dispatches.RESERVED)
    dispatches.handed_out(eng, f"{path}/{index}", stage, attempt)
    return True


def record_attempt(eng: Engine, path: str, index: int, made: dict[str, Any], verdict: dict[str, Any]) -> None:
    """One agent call of an item has been checked: its dispatch and usage, what was
    judged and decided on its output, and its `fanout_attempt_result`, in the order a
    consumer item's result records them, before the item's next call starts. Recorded
    once per call (the fanout's `settled`, keyed as `dispatched`), with the output and
    failure a runner after a kill takes instead of calling or judging again."""
    frame, step, st = _running_fanout(eng, path)
    key = f"{index}.{made['stage']}.{made['attempt']}"
    settled: dict[str, Any] = st["fanout"].setdefault("settled", {})
    if key in settled:
        return
    ledgers = task_ledgers(frame, step, st)
    _record_call(eng, path, step, st["epoch"], index, made, ledgers)
    for kind, detail in verdict["events"]:
        eng.emit(kind, f"{path}/{index}", **detail)
    learn(eng, verdict["evidence"])
    failure = verdict["failure"]
    eng.emit("fanout_attempt_result", f"{path}/{index}", stage=made["stage"], success=failure is None,
             reason=failure)
    settled[key] = {"output": verdict["output"], "failure": failure}
    if overspent(eng, frame, step, st, ledgers):
        eng.advance()


def record_item(eng: Engine, path: str, item: dict[str, Any]) -> None:
    """An item has finished. Its `calls` are those made again for attempts already
    settled (a worktree item run afresh after a kill): real spend, debited here."""
    frame, step, st = _running_fanout(eng, path)
    ledgers = task_ledgers(frame, step, st)
    item = dict(item)  # a lost race on the run's ref applies this again to the same item
    calls = item.pop("calls", [])
    for made in calls:  # their dispatches were debited as they started (record_dispatch)
        _record_call(eng, path, step, st["epoch"], item["index"], made, ledgers)
    st["fanout"]["items"][item["index"]] = item
    if item["status"] == "skipped":
        eng.emit("fanout_item_skipped", f"{path}/{item['index']}", stage=len(step.fanout.steps) - 1)
    made = {"commit": item["commit"]} if "commit" in item else {}  # a worktree item's edits
    eng.emit("fanout_item_done", path, index=item["index"], status=item["status"],
             failure=item.get("failure"), **made)
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


class _ItemRunner:
    def __init__(
        self,
        runs: RunAccess,
        spec: Spec,
        step: FanoutStep,
        step_path: str,
        scope: Scope,
        run_id: str,
        allowance: _Allowance,
        judge: Judge | None,
        lanes: ItemLanes | None,
        settled: dict[str, Any],
        call_item: ItemCall | None = None,
    ) -> None:
        self.runs, self.spec, self.step, self.step_path, self.scope = runs, spec, step, step_path, scope
        self.run_id, self.allowance, self.judge, self.lanes = run_id, allowance, judge, lanes
        self.settled = settled  # attempts a runner before this one recorded: key -> output, failure
        self.writing = threading.Lock()  # one transition of this fanout at a time
        self.call_item: ItemCall = call_item or self._call_here

    def _call_here(self, _key: str, agent: AgentSpec, prompt: str, cwd: Path, sandbox: str) -> CallResult:
        """An item's agent run by this process, registered so a cancel elsewhere stops it."""
        with agentgroups.registered(self.runs, self.run_id) as on_start:
            return call(agent, prompt, cwd, self.runs.pacing_dir, sandbox=sandbox,
                        admit=bounds.agent_output, on_start=on_start)

    def run(self, item: dict[str, Any]) -> None:
        """Run the item and record it, here in its worker (so with `concurrency: 1` the
        run's history is one item after another, as a consumer's would be). Once an
        item's call raised (a cancel), nothing more is recorded."""
        try:
            done = self._run(item)
        except BaseException:
            self.allowance.closed = True
            raise
        self._apply("fanout_item", partial(record_item, path=self.step_path, item=done), done["index"])

    def _apply(self, op: str, act: Callable[[Engine], bool | None], index: int) -> bool:
        """Commit one transition of this fanout; False (and the fanout closed) if the run
        or the step ended meanwhile. A dispatch the run's ledgers refuse (BudgetRefused)
        closes nothing: only that call is not made."""
        if self.allowance.closed:
            return False
        try:
            with self.writing:
                self.runs.apply(self.run_id, op, act, stepId=self.step_path, item=index)
        except BudgetRefused:
            raise
        except Refused:
            self.allowance.closed = True
            return False
        return True

    def _run(self, item: dict[str, Any]) -> dict[str, Any]:
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
                tree = worktrees.snapshot(wt)
                # the item's edits as a commit on the one it started from: what a worker on
                # another clone pushes, and the only thing the merge takes of it
                message = f"fanout item {self.step_path}/{item['index']} of run {self.run_id}\n"
                commit = commit_tree(self.runs.repo, tree, [wt.base], message)
                result.update(tree=str(tree), base=str(wt.base), commit=str(commit))
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
            key = f"{out['index']}.{i}.{n}"
            earlier = self.settled.get(key)
            failure = None
            if earlier is not None and self.step.fanout.isolation == "none":  # take what it gave
                output, reason = earlier["output"], earlier["failure"]
            else:
                made = self._call(out, key, i, n, stage, task, bindings, previous, cwd, sandbox)
                if isinstance(made, str):
                    return False, made
                output, failure = made
                if earlier is not None:  # a worktree item run afresh: its edits made again
                    output, reason = earlier["output"], earlier["failure"]
                else:
                    reason = self._check(out, i, n, stage, output, failure, scope, bindings, cwd)
                    verdict = {
                        "output": output,
                        "failure": reason,
                        "events": out.pop("events", []),
                        "evidence": out.pop("evidence", []),
                    }
                    act = partial(record_attempt, path=self.step_path, index=out["index"],
                                  made=out["calls"].pop(), verdict=verdict)
                    if not self._apply("fanout_attempt", act, out["index"]):
                        return False, f"stage {i}: fanout stopped"
            out["attempts"].append({"stage": i, "attempt": n, "result": output, "failure": reason})
            if reason is None:
                return True, output
            if agent_not_found(failure):  # no attempt could go otherwise
                return False, f"stage {i}: {reason}"
            if n > 1 and output is not None and deep_equal(output, last):
                return False, f"stage {i}: {reason} (no retry: identical evidence)"
            last, previous = output, {"attempt": n, "reason": reason}
        return False, f"stage {i}: {previous['reason'] if previous else 'failed'}"

    def _call(
        self,
        out: dict[str, Any],
        key: str,
        i: int,
        n: int,
        stage: Stage,
        task: str,
        bindings: dict[str, Any],
        previous: dict[str, Any] | None,
        cwd: Path,
        sandbox: str,
    ) -> tuple[Any, str | None] | str:
        """Call the item's agent for attempt `n` of stage `i`, its dispatch recorded in
        the run before it starts and the call appended to `out["calls"]`: (output,
        the call's failure), or why no call was made."""
        refused = self.allowance.take(key)
        if refused is None:
            act = partial(record_dispatch, path=self.step_path, index=out["index"], stage=i, attempt=n)
            try:
                if not self._apply("fanout_dispatch", act, out["index"]):
                    refused = "fanout stopped"
            except BudgetRefused as exc:  # another clone's calls took what was left
                refused = exc.reason
        if refused is not None:
            return f"stage {i}: {refused}"
        entry = {
            "do": task,
            "contract": self.spec.contracts.get(stage.out or "", {}),
            "previousFailure": previous,
        }
        agent = self.runs.config.get(stage.agent)
        res = self.call_item(key, agent, agent_prompt(entry), cwd, sandbox)
        spend = {**res.usage, "ms": res.duration_ms}
        self.allowance.settle(spend)
        out["calls"].append(
            {
                "dispatchId": new_token(),
                "stage": i,
                "attempt": n,
                "usage": spend,
                "telemetry": dispatches.engine_telemetry(agent.model(), res.duration_ms),
                "inputs": dispatches.inputs_digest(task, out["item"], bindings["prev"]),
                **({"sandbox": sandbox} if "{sandbox}" in agent.argv else {}),
            }
        )
        return res.output, res.failure

    def _check(
        self,
        out: dict[str, Any],
        i: int,
        n: int,
        stage: Stage,
        output: Any,
        failure: str | None,
        scope: Scope,
        bindings: dict[str, Any],
        cwd: Path,
    ) -> str | None:
        """Why attempt `n` of stage `i` failed (None: it passed), as a consumer item's
        result is checked: its lane's decision, the checks, what the judge said."""
        skip: frozenset[int] = frozenset()
        if failure is None:
            skip = self.lanes.judged_to_skip(out, i, n) if self.lanes else skip
            ensures = stage.ensure
            verdict = check(self.spec, stage.out, ensures, output, bindings, scope, cwd, self.judge, skip)
            out.setdefault("events", []).extend(["judged", {**j, "stage": i}] for j in verdict.judged)
            failure = verdict.reason
        if self.lanes is not None:
            self.lanes.record(out, i, n, failure, skip)
        return failure
