"""Advancing a run: start every step whose dependencies are settled, repeatedly, in
each frame, until nothing more can start; then a scope whose steps are all terminal
finishes, and one with nothing left that could run fails.

Starting a step is where it begins: a `set` or `evaluate` step runs at once, a `do`
step is made ready for an agent (one dispatch reserved), a gate waits, a `run` step
opens a subflow, a fanout renders its items. A `when` that is not exactly true skips it.
"""

from __future__ import annotations

import heapq
from typing import Any

from strato.flow import types as ty
from strato.flow.expr.errors import ExprError
from strato.flow.expr.evaluator import evaluate
from strato.flow.refs import RefSyntaxError, Scope, Unresolved, render_task, render_value
from strato.flow.spec import AnyStep, DoStep, EvaluateStep, FanoutStep, GateStep, RunStep, SetStep
from strato.runs.engine import dispatches, gates, tokens, verification
from strato.runs.engine import fanouts as fanout_steps
from strato.runs.engine.budgets import reserve, task_ledgers
from strato.runs.engine.checks import check
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.iterate import carry_sources, materialise_carry
from strato.runs.engine.outcomes import fail_scope, fail_step, finish, succeed
from strato.runs.engine.state import ACTIVE, TERMINAL, new_scope
from strato.runs.engine.table import Table, peek


def advance_run(ctx: RunContext) -> None:
    if ctx.run["status"] == "running":
        _advance(ctx, ctx.root_frame)


def _advance(ctx: RunContext, frame: Frame) -> bool:
    """Start every step that can start, repeatedly; True if anything changed. This runs
    on every transition: a root table that knows which steps the operation touched is
    advanced from those (:func:`_advance_touched`); any other scope by passes over every
    step, where a step that cannot start is passed over without a call, the run's status
    is looked at again only after a call, and a pass after the first stops where the
    previous one last changed something (every step after that was looked at with
    things as they are) unless it changes something."""
    if isinstance(frame.steps, Table):
        moved = _advance_touched(ctx, frame, frame.steps)
        if _open(ctx, frame):
            _settle_scope(ctx, frame)
        return moved
    any_change = False
    changed = True
    root = frame.parent is None
    sources = carry_sources(frame) if root else frozenset()
    stop = len(frame.flow.typed_steps)
    while _open(ctx, frame) and changed:
        changed = False
        if root:
            materialise_carry(ctx, frame)
        last = -1
        for i, step in enumerate(frame.flow.typed_steps if _open(ctx, frame) else ()):
            if i > stop and not changed:
                break
            visited = _visit(ctx, frame, step)
            if visited is None:
                continue
            if visited:
                changed, last = True, i
                if step.id in sources:  # a `set` or subflow that settled just now
                    materialise_carry(ctx, frame)
            if not _open(ctx, frame):
                break
        stop = last
        any_change |= changed
    if _open(ctx, frame):
        _settle_scope(ctx, frame)
    return any_change


def _visit(ctx: RunContext, frame: Frame, step: AnyStep) -> bool | None:
    """Advance one step as a pass finds it: a running subflow, or a pending step whose
    dependencies are settled; True if it changed, None if there was nothing to try."""
    steps, sid = frame.steps, step.id
    status = peek(steps, sid)["status"]
    if status == "running" and isinstance(step, RunStep):
        return _advance(ctx, ctx.child_frame(frame, step, steps[sid]))
    if status != "pending":
        return None
    info = ctx.info(frame.name)
    if sid not in info.routers:  # the common case, decided by a plain loop (no generator)
        for d in info.deps[sid]:
            if peek(steps, d)["status"] not in TERMINAL:
                return None
    return _try_start(ctx, frame, step, steps[sid])


def _advance_touched(ctx: RunContext, frame: Frame, steps: Table) -> bool:
    """The passes of :func:`_advance` over only the steps they could change. The table
    was made from a committed state, which was advanced: no pending step in it could
    start. So a step can start now only if it, a dependency or a step routing to it was
    touched since. Each round visits those steps in the flow's order, and the running
    subflows, as a full pass would: a step a change makes startable further down is
    visited in the same round, one further up in the next."""
    info = ctx.info(frame.name)
    typed = frame.flow.typed_steps
    sources = carry_sources(frame) if frame.parent is None else frozenset()
    seen: set[str] = set()

    def reached() -> set[str]:
        """The steps a change since the last look could make startable."""
        new = steps.touched - seen
        seen.update(new)
        return new.union(*(info.dependents.get(k, ()) for k in new)) & info.order.keys()

    any_change = False
    due = reached()
    while _open(ctx, frame):
        if frame.parent is None:
            materialise_carry(ctx, frame)
        due |= reached()
        queue = [info.order[k] for k in due.union(ctx.in_status(frame, ("running",)))]
        heapq.heapify(queue)
        queued, due, changed = set(queue), set(), False
        while queue and _open(ctx, frame):
            i = heapq.heappop(queue)
            step = typed[i]
            if not _visit(ctx, frame, step):
                continue
            changed = True
            if step.id in sources:
                materialise_carry(ctx, frame)
            for key in reached():
                j = info.order[key]
                if j > i and j not in queued:
                    queued.add(j)
                    heapq.heappush(queue, j)
                elif j <= i:
                    due.add(key)
        any_change |= changed
        if not changed:
            break
    return any_change


def _open(ctx: RunContext, frame: Frame) -> bool:
    """The run is running and this frame's scope has not finished."""
    return bool(ctx.run["status"] == "running" and not frame.scope.get("done"))


def _settle_scope(ctx: RunContext, frame: Frame) -> None:
    steps = frame.steps
    counted = steps.count(TERMINAL) if isinstance(steps, Table) else None
    if counted is not None and isinstance(steps, Table):
        if counted == len(steps):
            finish(ctx, frame)
        elif not steps.count(ACTIVE):
            fail_scope(ctx, frame, {"attempt": 0, "reason": "no runnable steps remain"})
        return
    statuses = [peek(steps, sid)["status"] for sid in steps]
    if all(s in TERMINAL for s in statuses):
        finish(ctx, frame)
    elif not any(s in ACTIVE for s in statuses):
        fail_scope(ctx, frame, {"attempt": 0, "reason": "no runnable steps remain"})


def _try_start(ctx: RunContext, frame: Frame, step: AnyStep, st: dict[str, Any]) -> bool:
    info = ctx.info(frame.name)
    sid = step.id
    if sid in info.routers and "routed" not in st:
        if sid in info.on_fail_targets and all(
            frame.steps[r]["status"] in TERMINAL for r in info.routers[sid]
        ):
            return _skip(ctx, frame, sid, "on_fail target was never routed")
        return False
    dep_states = {d: frame.steps[d]["status"] for d in info.deps[sid]}
    failed = [d for d, s in dep_states.items() if s == "failed"]
    if failed:
        return _skip(ctx, frame, sid, f"dependency {failed[0]} failed")
    if any(s not in ("succeeded", "skipped") for s in dep_states.values()):
        return False
    scope = ctx.scope_for(frame)
    if step.when is not None and _when(ctx, step.when, scope) is not True:
        return _skip(ctx, frame, sid, f"when is not true: {step.when}")
    if isinstance(step, SetStep):
        _run_set(ctx, frame, step, st, scope)
    elif isinstance(step, GateStep):
        gates.wait(ctx, frame, step, st)
    elif isinstance(step, FanoutStep):
        fanout_steps.start(ctx, frame, step, st, scope)
    elif isinstance(step, RunStep):
        _start_subflow(ctx, frame, step, st, scope)
    elif isinstance(step, EvaluateStep):
        _run_evaluate(ctx, frame, step, st, scope)
    else:
        assert isinstance(step, DoStep)
        _make_ready(ctx, frame, step, st, scope)
    return True


def _skip(ctx: RunContext, frame: Frame, sid: str, reason: str) -> bool:
    frame.steps[sid]["status"] = "skipped"
    ctx.emit("skipped", frame.prefix + sid, reason=reason)
    return True


def _when(ctx: RunContext, expr: str, scope: Scope) -> Any:
    try:
        return evaluate(expr, {"result": scope.outputs, "input": scope.input}, ctx.root)
    except ExprError:
        return False


def _run_set(ctx: RunContext, frame: Frame, step: SetStep, st: dict[str, Any], scope: Scope) -> None:
    context = {"result": scope.outputs, "input": scope.input}
    try:
        output = {k: evaluate(v, context, ctx.root) for k, v in step.set.items()}
    except ExprError as exc:
        verification.record(ctx, frame, step, st, f"set failed: {exc}")
        fail_step(ctx, frame, step, st, f"set failed: {exc}", None, forced=True)
        return
    skip = verification.judged_to_skip(ctx, frame, step, st)
    bindings = {"input": scope.input}
    verdict = check(ctx.spec, step.out, step.ensure, output, bindings, scope, ctx.root, ctx.judge, skip)
    for judged in verdict.judged:
        ctx.emit("judged", frame.prefix + step.id, **judged)
    verification.record(ctx, frame, step, st, verdict.reason, skip)
    if verdict.reason is not None:
        fail_step(ctx, frame, step, st, verdict.reason, output, forced=True)
        return
    succeed(ctx, frame, step, st, output, {})


def _run_evaluate(
    ctx: RunContext, frame: Frame, step: EvaluateStep, st: dict[str, Any], scope: Scope
) -> None:
    """Run the command once; any failure is final for the step (no retry)."""
    try:
        value = render_value(step.evaluate.in_, scope)
    except (Unresolved, RefSyntaxError) as exc:
        fail_step(ctx, frame, step, st, f"render failed: {exc}", None, forced=True)
        return
    if ctx.evaluator is None:
        fail_step(ctx, frame, step, st, "evaluate: no command runner configured", None, forced=True)
        return
    if verification.skip_evaluate(ctx, frame, step, st):
        return
    done = ctx.evaluator(step.evaluate.command, value, step.evaluate.timeout_ms)
    extra = {"durationMs": done.duration_ms}
    reason = done.failure
    if reason is None:
        reason = check(ctx.spec, step.out, None, done.output, {}, scope, ctx.root, None).reason
    verification.record(ctx, frame, step, st, reason)
    if reason is not None:
        fail_step(ctx, frame, step, st, reason, done.output, forced=True, extra=extra)
        return
    succeed(ctx, frame, step, st, done.output, extra)


def _make_ready(ctx: RunContext, frame: Frame, step: DoStep, st: dict[str, Any], scope: Scope) -> None:
    try:
        prompt = render_task(step.do, scope)
    except (Unresolved, RefSyntaxError) as exc:
        fail_step(ctx, frame, step, st, f"render failed: {exc}", None)
        return
    context, refused = tokens.costed(ctx.spec.contracts, frame, step, st, prompt)
    if refused is not None:  # nothing was dispatched: no retry would fit either
        extra = {"refused": True, "context": context}
        fail_step(ctx, frame, step, st, refused, None, forced=True, extra=extra)
        return
    if not reserve(ctx, frame, step, st, task_ledgers(frame, step, st), {"dispatches": 1}):
        return
    attempt = len(st["attempts"]) + 1
    path = frame.prefix + step.id
    st.update(status="ready", prompt=prompt, context=context)
    record = {"stepId": path, "attempt": attempt, "epoch": st["epoch"]}
    contract = dispatches.contract_digest(ctx.spec, step, None, ctx.info(frame.name).digests)
    dispatches.issue(ctx, record, contract, dispatches.inputs_digest(prompt), st)
    ctx.emit("ready", path, attempt=attempt, context=context)


def _start_subflow(ctx: RunContext, frame: Frame, step: RunStep, st: dict[str, Any], scope: Scope) -> None:
    callee = ctx.spec.flow(step.run)
    assert callee is not None
    try:
        inputs = render_value(step.with_, scope)
    except (Unresolved, RefSyntaxError) as exc:
        fail_step(ctx, frame, step, st, f"render failed: {exc}", None, forced=True)
        return
    errors = ty.check_object(inputs, callee.input, ctx.spec.contracts)
    if errors:
        fail_step(ctx, frame, step, st, f"subflow input invalid: {errors[0]}", None, forced=True)
        return
    st.update(status="running", sub=new_scope(step.run, callee, inputs))
    ctx.emit("subflow_started", frame.prefix + step.id, flow=step.run)
