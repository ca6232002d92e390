"""The run state machine: plan, advance, step results, gates, cancel and checkpoint
restore, over a run held as plain JSON (the `run.json` of each transition).

The engine never does I/O beyond reading files for ensures and asking the judge: the
service layer loads a run, calls one operation here, and commits the result. Each
operation appends events to `Engine.events`; an operation that is refused raises
`Refused` before it changes anything.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from strato.flow import types as ty
from strato.flow.expr import ExprError, evaluate
from strato.flow.expr.values import deep_equal
from strato.flow.graph import StepGraph
from strato.flow.leaves import step_leaves
from strato.flow.refs import (
    RefSyntaxError,
    Scope,
    Unresolved,
    parse_template,
    render,
    render_task,
    render_value,
)
from strato.flow.spec import (
    AnyStep,
    DoStep,
    EvaluateStep,
    FanoutStep,
    Flow,
    GateStep,
    RunStep,
    SetStep,
    Spec,
)
from strato.flow.validate import check_entry_input
from strato.runs import consumer as consumer_fanout
from strato.runs.checks import DEFAULT_ATTEMPTS, Judge, check, contract_errors, until_holds
from strato.runs.commands import Evaluator
from strato.runs.ledger import Ledger, usage_errors

TERMINAL = frozenset({"succeeded", "failed", "skipped"})
ACTIVE = frozenset({"ready", "running", "waiting_gate"})
RUN_TERMINAL = frozenset({"completed", "failed", "budget_exhausted", "cancelled"})
RESOLVERS = ("human", "agent", "system")  # who decided a gate (kept in its history)
# refusals that mean "the request itself is wrong" (the CLI exits 2 for these)
USAGE_CODES = frozenset({"INPUT_CONTRACT_INVALID", "invalid_run_id", "invalid_label"})


class Refused(Exception):
    """An operation that does not apply to the run as it is (stale token, wrong step,
    finished run, ...). `code` is stable for `--json` output."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_token() -> str:
    return str(uuid.uuid4())


def revision_digest(spec: Spec) -> str:
    canonical = json.dumps(spec.model_dump(mode="json", by_alias=True), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def fresh_step(epoch: int = 0) -> dict[str, Any]:
    return {"status": "pending", "attempts": [], "epoch": epoch, "spent": {}}


def new_scope(name: str, flow: Flow, inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "flow": name,
        "input": inputs,
        "rounds": 0,
        "steps": {s.id: fresh_step() for s in flow.typed_steps},
    }


def plan(spec: Spec, inputs: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """A new run of the entry flow; `Refused("INPUT_CONTRACT_INVALID")` on bad input."""
    flow = spec.flow(spec.entry)
    assert flow is not None  # validation guarantees the entry exists
    errors = check_entry_input(spec, inputs)
    if errors:
        raise Refused("INPUT_CONTRACT_INVALID", f"{errors[0].path}: {errors[0].message}")
    return {
        "id": run_id or str(uuid.uuid4()),
        "flow": spec.entry,
        "status": "running",
        "input": inputs,
        "revisionDigest": revision_digest(spec),
        "scope": new_scope(spec.entry, flow, inputs),
        "flowSpent": {},
        "carry": {},
        "createdAt": now_iso(),
    }


@dataclass
class FlowInfo:
    """What the engine derives once per flow: dependencies and routing."""

    deps: dict[str, list[str]]
    routers: dict[str, list[str]]  # routing target -> steps that may route to it
    on_fail_targets: set[str]
    graph: StepGraph
    output_sources: set[str]  # steps whose output `output.from` reads


def flow_info(flow: Flow) -> FlowInfo:
    ids = [s.id for s in flow.typed_steps]
    graph = StepGraph(ids)
    deps: dict[str, list[str]] = {}
    routers: dict[str, list[str]] = {}
    on_fail: set[str] = set()
    for step in flow.typed_steps:
        found = list(step.deps_declared)
        for leaf in step_leaves(step, ""):
            if leaf.expression:
                continue
            try:
                refs = parse_template(leaf.text).refs
            except RefSyntaxError:
                continue
            found += [r.name for r in refs if r.kind == "step" and r.name in ids]
        deps[step.id] = list(dict.fromkeys(found))
        for dep in deps[step.id]:
            graph.add(dep, step.id, "dep")
        routes = _routes(step)
        for target, kind in routes:
            routers.setdefault(target, []).append(step.id)
            if kind == "on_fail":
                on_fail.add(target)
            graph.add(step.id, target, "route")
    try:
        sources = {r.name for r in parse_template(flow.output.from_).refs if r.kind == "step"}
    except RefSyntaxError:  # validation refuses this; no early check then
        sources = set()
    return FlowInfo(deps, routers, on_fail, graph, sources)


def _routes(step: AnyStep) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(step, DoStep | FanoutStep | RunStep) and step.on_fail:
        out.append((step.on_fail, "on_fail"))
    if isinstance(step, GateStep):
        out += [(t, k) for k, t in (("approve", step.gate.on_approve), ("kill", step.gate.on_kill)) if t]
    return out


@dataclass
class Frame:
    """One flow scope being advanced: the root run or a subflow under a `run` step."""

    name: str
    flow: Flow
    scope: dict[str, Any]
    prefix: str
    ledgers: list[Ledger]
    parent: tuple[Frame, RunStep] | None = None

    @property
    def steps(self) -> dict[str, dict[str, Any]]:
        steps: dict[str, dict[str, Any]] = self.scope["steps"]  # run.json is plain JSON
        return steps

    def outputs(self) -> dict[str, Any]:
        return {
            k: st["output"] for k, st in self.steps.items() if st["status"] == "succeeded" and "output" in st
        }


@dataclass
class Engine:
    spec: Spec
    run: dict[str, Any]
    root: Path | None = None
    judge: Judge | None = None
    evaluator: Evaluator | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    clock: Callable[[], str] = now_iso
    _info: dict[str, FlowInfo] = field(default_factory=dict)

    # --- plumbing

    def emit(self, kind: str, step: str | None = None, **detail: Any) -> None:
        event: dict[str, Any] = {"at": self.clock(), "type": kind}
        if step is not None:
            event["stepId"] = step
        if detail:
            event["detail"] = detail
        self.events.append(event)

    def info(self, name: str) -> FlowInfo:
        if name not in self._info:
            flow = self.spec.flow(name)
            assert flow is not None
            self._info[name] = flow_info(flow)
        return self._info[name]

    @cached_property
    def root_frame(self) -> Frame:
        flow = self.spec.flow(self.run["flow"])
        assert flow is not None
        ledger = Ledger("flow", flow.budget, self.run["flowSpent"])
        return Frame(self.run["flow"], flow, self.run["scope"], "", [ledger])

    def child_frame(self, frame: Frame, step: RunStep, st: dict[str, Any]) -> Frame:
        flow = self.spec.flow(step.run)
        assert flow is not None
        ledgers = [*frame.ledgers, Ledger("subflow", step.budget, st["spent"])]
        return Frame(step.run, flow, st["sub"], f"{frame.prefix}{step.id}/", ledgers, (frame, step))

    def frames(self, frame: Frame | None = None) -> Iterator[Frame]:
        frame = frame or self.root_frame
        yield frame
        for step in frame.flow.typed_steps:
            st = frame.steps[step.id]
            if isinstance(step, RunStep) and st["status"] == "running":
                yield from self.frames(self.child_frame(frame, step, st))

    def locate(self, path: str) -> tuple[Frame, AnyStep, dict[str, Any]]:
        for frame in self.frames():
            rest = path[len(frame.prefix) :] if path.startswith(frame.prefix) else None
            if rest is not None and "/" not in rest:
                step = frame.flow.step(rest)
                if step is not None:
                    return frame, step, frame.steps[rest]
        raise Refused("unknown_step", f"no step {path!r} in this run")

    def scope_for(self, frame: Frame) -> Scope:
        carry = {k: v["value"] for k, v in self.run["carry"].items()} if frame.parent is None else {}
        return Scope(input=frame.scope["input"], outputs=frame.outputs(), carry=carry)

    def require_running(self) -> None:
        if self.run["status"] != "running":
            raise Refused("run_not_running", f"run is {self.run['status']}")

    # --- advancing

    def advance(self) -> None:
        if self.run["status"] == "running":
            self._advance(self.root_frame)

    def _advance(self, frame: Frame) -> bool:
        """Start every step that can start, repeatedly; True if anything changed."""
        any_change = False
        changed = True
        while changed and self.run["status"] == "running" and not frame.scope.get("done"):
            changed = False
            if frame.parent is None:
                self._materialise_carry(frame)
            for step in frame.flow.typed_steps:
                if self.run["status"] != "running" or frame.scope.get("done"):
                    break
                st = frame.steps[step.id]
                if st["status"] == "running" and isinstance(step, RunStep):
                    changed |= self._advance(self.child_frame(frame, step, st))
                elif st["status"] == "pending":
                    changed |= self._try_start(frame, step, st)
            any_change |= changed
        if self.run["status"] == "running" and not frame.scope.get("done"):
            self._settle_scope(frame)
        return any_change

    def _settle_scope(self, frame: Frame) -> None:
        statuses = [st["status"] for st in frame.steps.values()]
        if all(s in TERMINAL for s in statuses):
            self._finish(frame)
        elif not any(s in ACTIVE for s in statuses):
            self._fail_scope(frame, {"attempt": 0, "reason": "no runnable steps remain"})

    def _try_start(self, frame: Frame, step: AnyStep, st: dict[str, Any]) -> bool:
        info = self.info(frame.name)
        sid, path = step.id, frame.prefix + step.id
        steps = frame.steps
        if sid not in info.routers and any(steps[d]["status"] not in TERMINAL for d in info.deps[sid]):
            return False  # the common case, decided cheaply: still waiting on a dependency
        if sid in info.routers and "routed" not in st:
            if sid in info.on_fail_targets and all(
                frame.steps[r]["status"] in TERMINAL for r in info.routers[sid]
            ):
                return self._skip(frame, sid, "on_fail target was never routed")
            return False
        dep_states = {d: frame.steps[d]["status"] for d in info.deps[sid]}
        failed = [d for d, s in dep_states.items() if s == "failed"]
        if failed:
            return self._skip(frame, sid, f"dependency {failed[0]} failed")
        if any(s not in ("succeeded", "skipped") for s in dep_states.values()):
            return False
        scope = self.scope_for(frame)
        if step.when is not None and self._when(step.when, frame, scope) is not True:
            return self._skip(frame, sid, f"when is not true: {step.when}")
        if isinstance(step, SetStep):
            self._run_set(frame, step, st, scope)
        elif isinstance(step, GateStep):
            st.update(status="waiting_gate", gateToken=new_token())
            self.emit("gate_waiting", path, round=frame.scope["rounds"])
        elif isinstance(step, FanoutStep):
            self._start_fanout(frame, step, st, scope)
        elif isinstance(step, RunStep):
            self._start_subflow(frame, step, st, scope)
        elif isinstance(step, EvaluateStep):
            self._run_evaluate(frame, step, st, scope)
        else:
            assert isinstance(step, DoStep)
            self._make_ready(frame, step, st, scope)
        return True

    def _skip(self, frame: Frame, sid: str, reason: str) -> bool:
        frame.steps[sid]["status"] = "skipped"
        self.emit("skipped", frame.prefix + sid, reason=reason)
        return True

    def _when(self, expr: str, frame: Frame, scope: Scope) -> Any:
        try:
            return evaluate(expr, {"result": scope.outputs, "input": scope.input}, self.root)
        except ExprError:
            return False

    def _run_set(self, frame: Frame, step: SetStep, st: dict[str, Any], scope: Scope) -> None:
        context = {"result": scope.outputs, "input": scope.input}
        try:
            output = {k: evaluate(v, context, self.root) for k, v in step.set.items()}
        except ExprError as exc:
            self._fail_step(frame, step, st, f"set failed: {exc}", None, forced=True)
            return
        verdict = check(
            self.spec, step.out, step.ensure, output, {"input": scope.input}, scope, self.root, self.judge
        )
        if verdict.reason is not None:
            self._fail_step(frame, step, st, verdict.reason, output, forced=True)
            return
        self._succeed(frame, step, st, output, {})

    def _run_evaluate(self, frame: Frame, step: EvaluateStep, st: dict[str, Any], scope: Scope) -> None:
        """Run the command once; any failure is final for the step (no retry)."""
        try:
            value = render_value(step.evaluate.in_, scope)
        except (Unresolved, RefSyntaxError) as exc:
            self._fail_step(frame, step, st, f"render failed: {exc}", None, forced=True)
            return
        if self.evaluator is None:
            self._fail_step(frame, step, st, "evaluate: no command runner configured", None, forced=True)
            return
        done = self.evaluator(step.evaluate.command, value, step.evaluate.timeout_ms)
        extra = {"durationMs": done.duration_ms}
        reason = done.failure
        if reason is None:
            reason = check(self.spec, step.out, None, done.output, {}, scope, self.root, None).reason
        if reason is not None:
            self._fail_step(frame, step, st, reason, done.output, forced=True, extra=extra)
            return
        self._succeed(frame, step, st, done.output, extra)

    def _make_ready(self, frame: Frame, step: DoStep, st: dict[str, Any], scope: Scope) -> None:
        path = frame.prefix + step.id
        try:
            prompt = render_task(step.do, scope)
        except (Unresolved, RefSyntaxError) as exc:
            self._fail_step(frame, step, st, f"render failed: {exc}", None)
            return
        ledgers = [*frame.ledgers, Ledger("task", step.budget, st["spent"])]
        if not self.reserve(frame, step, st, ledgers, {"dispatches": 1}):
            return
        attempt = len(st["attempts"]) + 1
        st.update(status="ready", dispatchToken=new_token(), prompt=prompt)
        self.emit("ready", path, attempt=attempt)

    def reserve(
        self, frame: Frame, step: AnyStep, st: dict[str, Any], ledgers: list[Ledger], amount: dict[str, float]
    ) -> bool:
        """Debit `amount` from every ledger, or handle the first ledger that refuses."""
        for ledger in ledgers:
            keys = ledger.blocking(amount)
            if keys:
                self.breach(frame, step, st, ledger, keys)
                return False
        for ledger in ledgers:
            ledger.debit(amount)
        return True

    def breach(
        self, frame: Frame, step: AnyStep, st: dict[str, Any], ledger: Ledger, keys: list[str]
    ) -> None:
        """A ledger refused a reservation or was overspent by settled usage: the flow
        ledger ends the run, a subflow ledger fails its `run` step, a task ledger the
        step itself (no retry: the budget would refuse it again)."""
        reason = f"{ledger.level} budget exhausted ({', '.join(keys)})"
        if ledger.level == "flow":
            failure = {"attempt": 0, "reason": reason}
            if st["status"] in ACTIVE:  # dispatched, but its result cannot be accepted
                st.update(status="failed", failure=failure)
            self.run.update(status="budget_exhausted", failure=failure)
            self.emit(
                "budget_exhausted",
                frame.prefix + step.id,
                reason=reason,
                spent=dict(ledger.spent),
                limits=ledger.limits(),
            )
        elif ledger.level == "subflow":
            assert frame.parent is not None
            parent, run_step = self._owner(frame, ledger)
            owner = parent.steps[run_step.id]
            owner["sub"]["done"] = True  # its ready steps and gates are no longer handed out
            self._fail_step(parent, run_step, owner, reason, None, forced=True)
        else:
            self._fail_step(frame, step, st, reason, None, forced=True)

    def _owner(self, frame: Frame, ledger: Ledger) -> tuple[Frame, RunStep]:
        """The frame and `run` step whose subflow ledger this is."""
        while frame.parent is not None:
            parent, run_step = frame.parent
            if parent.steps[run_step.id]["spent"] is ledger.spent:
                return parent, run_step
            frame = parent
        raise AssertionError("subflow ledger without an owner")

    # --- outcomes

    def _succeed(
        self, frame: Frame, step: AnyStep, st: dict[str, Any], output: Any, extra: dict[str, Any]
    ) -> None:
        attempt = len(st["attempts"]) + 1
        st["attempts"].append({"attempt": attempt, "at": self.clock(), "result": output, **extra})
        st.update(status="succeeded", output=output)
        st.pop("previousFailure", None)
        self.emit("result", frame.prefix + step.id, success=True, attempt=attempt)
        self._check_output_early(frame, step.id)

    def _fail_step(
        self,
        frame: Frame,
        step: AnyStep,
        st: dict[str, Any],
        reason: str,
        output: Any,
        forced: bool = False,
        may_retry: bool | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Record a failed attempt; retry, route to `on_fail`, or fail the scope."""
        attempt = len(st["attempts"]) + 1
        previous = st["attempts"][-1] if st["attempts"] else None
        if output is not None and previous is not None and deep_equal(previous.get("result"), output):
            reason += " (no retry: identical evidence)"
            forced = True
        st["attempts"].append(
            {"attempt": attempt, "at": self.clock(), "result": output, "failure": reason, **(extra or {})}
        )
        limit = getattr(step, "attempts", None) or DEFAULT_ATTEMPTS
        retry = (attempt < limit) if may_retry is None else may_retry
        path = frame.prefix + step.id
        if retry and not forced:
            st.update(status="pending", previousFailure={"attempt": attempt, "reason": reason})
            self.emit(
                "result", path, success=False, attempt=attempt, reason=reason, retry=True, **(extra or {})
            )
            return
        failure = {"attempt": attempt, "reason": reason}
        st.update(status="failed", failure=failure)
        st.pop("previousFailure", None)
        self.emit("result", path, success=False, attempt=attempt, reason=reason, retry=False, **(extra or {}))
        target = getattr(step, "on_fail", None)
        if target:
            frame.steps[target]["routed"] = failure
            self.emit("routed", path, target=frame.prefix + target, failure=failure)
        else:
            self._fail_scope(frame, failure)

    def _fail_scope(self, frame: Frame, failure: dict[str, Any]) -> None:
        if frame.parent is None:
            self.run.update(status="failed", failure=failure)
            self.emit("failed", reason=failure["reason"])
            return
        parent, run_step = frame.parent
        frame.scope["done"] = True
        self._fail_step(
            parent,
            run_step,
            parent.steps[run_step.id],
            f"subflow failed: {failure['reason']}",
            None,
            forced=True,
        )

    def _flow_output(self, frame: Frame) -> tuple[Any, str | None]:
        """The flow's output as things stand and why it is not acceptable (None: it is)."""
        try:
            output = render(frame.flow.output.from_, self.scope_for(frame))
        except (Unresolved, RefSyntaxError) as exc:
            return None, f"flow output unavailable: {exc}"
        contract = frame.flow.output.contract
        errors = contract_errors(self.spec, contract, output)
        if errors:
            return output, f"flow output breaks contract {contract}: {'; '.join(errors[:5])}"
        return output, None

    def _check_output_early(self, frame: Frame, step_id: str) -> None:
        """A step that feeds `output.from` just succeeded: once every source is there,
        check the flow output now rather than after the rest of the flow has run."""
        sources = self.info(frame.name).output_sources
        if step_id not in sources or any(frame.steps[s]["status"] != "succeeded" for s in sources):
            return
        _output, reason = self._flow_output(frame)
        if reason is not None:
            self._fail_scope(frame, {"attempt": 0, "reason": reason})

    def _finish(self, frame: Frame) -> None:
        """Every step is terminal: produce the flow output, checked against its contract."""
        output, reason = self._flow_output(frame)
        if reason is not None:
            self._fail_scope(frame, {"attempt": 0, "reason": reason})
            return
        frame.scope["done"] = True
        if frame.parent is None:
            self.run.update(status="completed", output=output)
            self.emit("completed")
        else:
            parent, run_step = frame.parent
            self._succeed(parent, run_step, parent.steps[run_step.id], output, {})

    # --- subflows and fanout starts

    def _start_subflow(self, frame: Frame, step: RunStep, st: dict[str, Any], scope: Scope) -> None:
        callee = self.spec.flow(step.run)
        assert callee is not None
        try:
            inputs = render_value(step.with_, scope)
        except (Unresolved, RefSyntaxError) as exc:
            self._fail_step(frame, step, st, f"render failed: {exc}", None, forced=True)
            return
        errors = ty.check_object(inputs, callee.input, self.spec.contracts)
        if errors:
            self._fail_step(frame, step, st, f"subflow input invalid: {errors[0]}", None, forced=True)
            return
        st.update(status="running", sub=new_scope(step.run, callee, inputs))
        self.emit("subflow_started", frame.prefix + step.id, flow=step.run)

    def _start_fanout(self, frame: Frame, step: FanoutStep, st: dict[str, Any], scope: Scope) -> None:
        try:
            items = render(step.fanout.over, scope)
        except (Unresolved, RefSyntaxError) as exc:
            self._fail_step(frame, step, st, f"fanout.over: {exc}", None, forced=True)
            return
        if not isinstance(items, list):
            self._fail_step(frame, step, st, "fanout.over must resolve to an array", None, forced=True)
            return
        consumer = step.fanout.dispatch == "consumer"
        extra: dict[str, Any] = {"stage": 0, "attempts": []} if consumer else {}
        st.update(
            status="running",
            fanout={
                "items": [{"index": i, "item": v, "status": "pending", **extra} for i, v in enumerate(items)]
            },
        )
        self.emit("fanout_started", frame.prefix + step.id, items=len(items), dispatch=step.fanout.dispatch)
        if consumer:
            consumer_fanout.promote(self, frame, step, st)

    # --- ready steps and results

    def ready(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.run["status"] != "running":
            return out
        for frame in self.frames():
            for step in frame.flow.typed_steps:
                st = frame.steps[step.id]
                if st["status"] == "ready" and isinstance(step, DoStep):
                    out.append(self._descriptor(frame, step, st))
                elif st["status"] == "running" and _consumer(step):
                    assert isinstance(step, FanoutStep)
                    out += [
                        consumer_fanout.descriptor(self, frame, step, it)
                        for it in st["fanout"]["items"]
                        if it["status"] == "ready"
                    ]
        return out

    def _descriptor(self, frame: Frame, step: DoStep, st: dict[str, Any]) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": frame.prefix + step.id,
            "do": st["prompt"],
            "agent": step.agent,
            "attempt": len(st["attempts"]) + 1,
            "epoch": st["epoch"],
            "dispatchToken": st["dispatchToken"],
            "out": step.out,
        }
        if step.out:
            entry["contract"] = dict(self.spec.contracts.get(step.out, {}))
        if "previousFailure" in st:
            entry["previousFailure"] = st["previousFailure"]
        return entry

    def step_done(self, path: str, result: Any, token: str | None) -> None:
        self.require_running()
        head, _, index = path.rpartition("/")
        if head and index.isdigit():  # `<fanout>/<index>`: a consumer fanout item
            frame, step, st = self.locate(head)
            items = st.get("fanout", {}).get("items", [])
            if not (_consumer(step) and st["status"] == "running" and int(index) < len(items)):
                raise Refused("step_not_ready", f"{path} is not a ready fanout item")
            assert isinstance(step, FanoutStep)
            item = items[int(index)]
            usage = _accept(path, item, result, token)
            consumer_fanout.item_done(self, frame, step, st, item, result, usage)
            consumer_fanout.promote(self, frame, step, st)
            self.advance()
            return
        frame, step, st = self.locate(path)
        if not isinstance(step, DoStep):
            raise Refused("step_not_ready", f"step {path} is not ready (it is {st['status']})")
        usage = _accept(path, st, result, token)
        self._settle(frame, step, st, result, usage)
        self.advance()

    def _settle(
        self, frame: Frame, step: DoStep, st: dict[str, Any], result: dict[str, Any], usage: dict[str, float]
    ) -> None:
        ledgers = [*frame.ledgers, Ledger("task", step.budget, st["spent"])]
        spend = {k: v for k, v in usage.items() if k != "dispatches"}
        for ledger in ledgers:
            ledger.debit(spend)
        extra = {"usage": usage} if usage else {}
        output = result.get("output")
        if "dispatches" in usage:
            self._fail_step(frame, step, st, "dispatches are engine-accounted", output, extra=extra)
            return
        for ledger in ledgers:
            if ledger.over():
                self.breach(frame, step, st, ledger, ledger.over())
                return
        failure = result.get("failure")
        if failure is not None:
            self._fail_step(frame, step, st, f"agent reported failure: {failure}", output, extra=extra)
            return
        scope = self.scope_for(frame)
        bindings = {"input": scope.input}
        verdict = check(self.spec, step.out, step.ensure, output, bindings, scope, self.root, self.judge)
        for judged in verdict.judged:
            self.emit("judged", frame.prefix + step.id, **judged)
        if verdict.reason is not None:
            self._fail_step(frame, step, st, verdict.reason, output, extra=extra)
            return
        if step.iterate is not None:
            miss = until_holds(step.iterate.until, output, bindings, self.root)
            if miss is not None:
                st["iterations"] = st.get("iterations", 0) + 1
                more = st["iterations"] < step.iterate.max
                note = {"iterate": {"iteration": st["iterations"], "max": step.iterate.max}, **extra}
                self._fail_step(frame, step, st, miss, output, may_retry=more, extra=note)
                return
        self._succeed(frame, step, st, output, extra)

    # --- gates

    def gate_resolve(
        self,
        path: str,
        decision: str,
        token: str | None,
        note: str | None = None,
        resolved_by: str = "human",
        client: str | None = None,
    ) -> None:
        """`client` names the MCP client that decided (from its handshake), kept beside
        `resolvedBy` in the event and the gate's attempt record."""
        self.require_running()
        frame, step, st = self.locate(path)
        if not isinstance(step, GateStep):
            raise Refused("not_a_gate_step", f"step {path} is not a gate")
        if st["status"] != "waiting_gate":
            raise Refused("gate_not_waiting", f"gate {path} is not waiting (it is {st['status']})")
        if not token or token != st.get("gateToken"):
            raise Refused("stale_token", "gate decision is stale: the token does not match the waiting gate")
        if decision not in ("approve", "revise", "kill"):
            raise Refused("invalid_decision", f"unknown decision {decision!r}")
        if resolved_by not in RESOLVERS:
            raise Refused("invalid_decision", f"resolved_by must be one of {', '.join(RESOLVERS)}")
        target = {"approve": step.gate.on_approve, "revise": step.gate.on_revise, "kill": step.gate.on_kill}[
            decision
        ]
        detail = {
            "decision": decision,
            "target": target,
            "resolvedBy": resolved_by,
            **({"client": client} if client else {}),
            **({"note": note} if note else {}),
        }
        self.emit("gate_resolved", path, **detail)
        st.pop("gateToken", None)
        if decision == "revise":
            self._revise(frame, step, st, target)
        else:
            by = {"resolvedBy": resolved_by, **({"client": client} if client else {})}
            self._approve_or_kill(frame, step, st, decision, target, by)
        self.advance()

    def _approve_or_kill(
        self,
        frame: Frame,
        step: GateStep,
        st: dict[str, Any],
        decision: str,
        target: str | None,
        by: dict[str, str],
    ) -> None:
        failure = {
            "attempt": 0,
            "reason": f"gate {step.id} {'approved' if decision == 'approve' else 'killed flow'}",
        }
        if decision == "kill" and target is None:
            st.update(status="failed", failure=failure)
            self.run.update(status="failed", failure={**failure, "killed": True})
            self.emit("failed", frame.prefix + step.id, reason=failure["reason"], killed=True)
            return
        st["status"] = "succeeded"
        st["attempts"].append(
            {
                "attempt": len(st["attempts"]) + 1,
                "at": self.clock(),
                "decision": decision,
                **by,
            }
        )
        if target is not None:
            frame.steps[target]["routed"] = {"attempt": 0, "reason": f"gate {decision}"}
            self.emit("routed", frame.prefix + step.id, target=frame.prefix + target)

    def _revise(self, frame: Frame, step: GateStep, st: dict[str, Any], target: str | None) -> None:
        total = frame.scope["rounds"] + 1
        iterations = st.get("iterations", 0)
        limit = frame.flow.max_rounds
        gate_limit = step.gate.max_rounds
        if (
            target is None
            or limit is None
            or total > limit
            or (gate_limit is not None and iterations + 1 > gate_limit)
        ):
            st.update(status="failed", failure={"attempt": 0, "reason": "gate revision rounds exhausted"})
            self._fail_scope(frame, {"attempt": 0, "reason": "gate revision rounds exhausted"})
            return
        closure = self.info(frame.name).graph.closure(target)
        if frame.parent is None:
            self._carry_on_revise(frame, step, st, total, closure)
        reset = []
        for sid in [s.id for s in frame.flow.typed_steps if s.id in closure]:
            old = frame.steps[sid]
            frame.steps[sid] = fresh_step(old["epoch"] + 1)
            reset.append(
                {"stepId": frame.prefix + sid, "fromEpoch": old["epoch"], "toEpoch": old["epoch"] + 1}
            )
        frame.scope["rounds"] = total
        frame.steps[step.id]["iterations"] = iterations + 1
        self.emit("step_reset", frame.prefix + step.id, reason="revise", reset=reset, round=total)

    # --- carry

    def _materialise_carry(self, frame: Frame) -> None:
        for name, var in (frame.flow.carry or {}).items():
            ref = parse_template(var.initial).full
            if ref is None:
                continue
            have = self.run["carry"].get(name)
            if ref.kind == "input":
                if have is None:
                    self._write_carry(name, var.initial, frame, {"kind": "initial"})
                continue
            src = frame.steps.get(ref.name)
            if src is None or src["status"] != "succeeded":
                continue
            if have is None or have["provenance"].get("sourceEpoch") != src["epoch"]:
                prov = {"kind": "initial", "sourceStep": ref.name, "sourceEpoch": src["epoch"]}
                self._write_carry(name, var.initial, frame, prov)

    def _write_carry(self, name: str, template: str, frame: Frame, provenance: dict[str, Any]) -> None:
        try:
            value = render(template, self.scope_for(frame))
        except (Unresolved, RefSyntaxError) as exc:
            self._fail_scope(frame, {"attempt": 0, "reason": f"carry_initial_unresolved: {name}: {exc}"})
            return
        provenance["at"] = self.clock()
        self.run["carry"][name] = {"value": value, "provenance": provenance}
        self.emit("carry_updated", name=name, reason=provenance["kind"], provenance=provenance)

    def _carry_on_revise(
        self, frame: Frame, gate: GateStep, st: dict[str, Any], round_: int, closure: set[str]
    ) -> None:
        for name, var in (frame.flow.carry or {}).items():
            template = (var.on_revise or {}).get(gate.id)
            if template is None:
                continue
            source = parse_template(var.initial).full
            epoch = None
            if source is not None and source.kind == "step":
                epoch = frame.steps[source.name]["epoch"] + (1 if source.name in closure else 0)
            prov = {"kind": "revise", "gate": gate.id, "round": round_, "sourceEpoch": epoch}
            self._write_carry(name, template, frame, prov)

    # --- run-level operations

    def cancel(self, by: str = "cli", reason: str | None = None) -> None:
        self.require_running()
        burned = 0
        for frame in self.frames():
            for st in frame.steps.values():
                if st["status"] in ACTIVE:
                    burned += 1
                for holder in _token_holders(st):
                    holder.pop("dispatchToken", None)
                    holder.pop("gateToken", None)
        self.run.update(status="cancelled", failure={"attempt": 0, "reason": reason or "cancelled"})
        self.emit("flow_cancelled", by=by, reason=reason, burned={"steps": burned})

    def restore(self, label: str, saved: dict[str, Any]) -> None:
        """Go back to a checkpoint's state; spend never rolls back and every live token
        is rotated so results and decisions issued after the checkpoint are stale."""
        spent = dict(self.run["flowSpent"])
        for key in ("status", "scope", "carry", "output", "failure"):
            if key in saved:
                self.run[key] = saved[key]
            else:
                self.run.pop(key, None)
        merged = {
            k: max(spent.get(k, 0), saved["flowSpent"].get(k, 0)) for k in {*spent, *saved["flowSpent"]}
        }
        self.run["flowSpent"] = merged
        self.__dict__.pop("root_frame", None)
        restored = 0
        for frame in self.frames():
            for st in frame.steps.values():
                restored += 1
                for holder in _token_holders(st):
                    for key in ("dispatchToken", "gateToken"):
                        if key in holder:
                            holder[key] = new_token()
        self.emit("checkpoint_reverted", label=label, stepsRestored=restored)
        self.advance()

    def running_fanouts(self) -> list[tuple[Frame, FanoutStep, dict[str, Any]]]:
        out = []
        for frame in self.frames():
            for step in frame.flow.typed_steps:
                st = frame.steps[step.id]
                if st["status"] == "running" and isinstance(step, FanoutStep) and not _consumer(step):
                    out.append((frame, step, st))
        return out

    def finish_fanout(self, path: str, outcome: FanoutOutcome) -> None:
        """Settle a fanout whose items have all run (the service ran and merged them)."""
        frame, step, st = self.locate(path)
        assert isinstance(step, FanoutStep)
        st["fanout"]["items"] = outcome.items
        self.conclude_fanout(frame, step, st, outcome.failure)
        self.advance()

    def conclude_fanout(
        self, frame: Frame, step: FanoutStep, st: dict[str, Any], failure: str | None
    ) -> None:
        """Every item has finished: the step's output is the items' outputs in order
        (null for items that did not succeed), or it fails with `failure`."""
        items = st["fanout"]["items"]
        output = [it.get("output") if it["status"] == "succeeded" else None for it in items]
        if failure is not None:
            self._fail_step(frame, step, st, failure, None, forced=True)
        else:
            self._succeed(frame, step, st, output, {})


@dataclass
class FanoutOutcome:
    items: list[dict[str, Any]]
    failure: str | None



def _consumer(step: AnyStep) -> bool:
    return isinstance(step, FanoutStep) and step.fanout.dispatch == "consumer"


def _accept(path: str, st: dict[str, Any], result: Any, token: str | None) -> dict[str, float]:
    """Check a reported result against what was handed out (status, token, shape) and
    take the token; the result's usage. Raises `Refused` before changing anything."""
    if st["status"] != "ready":
        raise Refused("step_not_ready", f"step {path} is not ready (it is {st['status']})")
    if not token:
        raise Refused("stale_token", "step result is stale: missing dispatch token")
    if token != st.get("dispatchToken"):
        raise Refused("stale_token", "step result is stale: the token belongs to a superseded issuance")
    if not isinstance(result, dict) or set(result) - {"output", "failure", "usage", "telemetry"}:
        raise Refused("invalid_result", "result must be an object with output, failure, usage, telemetry")
    usage = result.get("usage", {})
    problems = usage_errors(usage)
    if problems:
        raise Refused("invalid_result", problems[0])
    st.pop("dispatchToken", None)
    st["acceptedDispatchToken"] = token
    checked: dict[str, Any] = usage  # usage_errors found nothing wrong with its shape
    return checked


def _token_holders(st: dict[str, Any]) -> list[dict[str, Any]]:
    """A step's state and its consumer fanout items: where live tokens are kept."""
    return [st, *st.get("fanout", {}).get("items", [])]
