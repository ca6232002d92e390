"""How a step ends, and what its end does to its scope: a success is recorded (and may
make the flow output checkable early), a failure is retried, routed to `on_fail`, or
fails the scope, which fails the `run` step above a subflow or the run itself.

A scope whose steps are all terminal finishes with its output checked against its
contract; a fanout whose items have all finished ends with their outputs in order.
"""

from __future__ import annotations

from typing import Any

from strato.flow.expr.values import deep_equal
from strato.flow.refs import RefSyntaxError, Unresolved, render
from strato.flow.spec import AnyStep, FanoutStep
from strato.runs.engine.checks import DEFAULT_ATTEMPTS, contract_errors
from strato.runs.engine.context import Frame, RunContext


def succeed(
    ctx: RunContext, frame: Frame, step: AnyStep, st: dict[str, Any], output: Any, extra: dict[str, Any]
) -> None:
    attempt = len(st["attempts"]) + 1
    resolution = {"outcome": "succeeded", "resolution": "approved"}
    st["attempts"].append({"attempt": attempt, "at": ctx.clock(), "result": output, **extra, **resolution})
    st.update(status="succeeded", output=output)
    st.pop("previousFailure", None)
    ctx.emit("result", frame.prefix + step.id, success=True, attempt=attempt)
    _check_output_early(ctx, frame, step.id)


def fail_step(
    ctx: RunContext,
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
    record = {"attempt": attempt, "at": ctx.clock(), "result": output, "failure": reason, **(extra or {})}
    record.update(outcome="refused" if record.get("refused") else "failed", reason=reason)
    st["attempts"].append(record)
    limit = getattr(step, "attempts", None) or DEFAULT_ATTEMPTS
    retry = (attempt < limit) if may_retry is None else may_retry
    path = frame.prefix + step.id
    target = getattr(step, "on_fail", None)
    record["resolution"] = "retried" if retry and not forced else ("routed" if target else "gave up")
    if retry and not forced:
        st.update(status="pending", previousFailure={"attempt": attempt, "reason": reason})
        ctx.emit("result", path, success=False, attempt=attempt, reason=reason, retry=True, **(extra or {}))
        return
    failure = {"attempt": attempt, "reason": reason}
    st.update(status="failed", failure=failure)
    st.pop("previousFailure", None)
    ctx.emit("result", path, success=False, attempt=attempt, reason=reason, retry=False, **(extra or {}))
    if target:
        frame.steps[target]["routed"] = failure
        ctx.emit("routed", path, target=frame.prefix + target, failure=failure)
    else:
        fail_scope(ctx, frame, failure)


def fail_scope(ctx: RunContext, frame: Frame, failure: dict[str, Any]) -> None:
    if frame.parent is None:
        ctx.run.update(status="failed", failure=failure)
        ctx.emit("failed", reason=failure["reason"])
        return
    parent, run_step = frame.parent
    frame.scope["done"] = True
    owner = parent.steps[run_step.id]
    fail_step(ctx, parent, run_step, owner, f"subflow failed: {failure['reason']}", None, forced=True)


def flow_output(ctx: RunContext, frame: Frame) -> tuple[Any, str | None]:
    """The flow's output as things stand and why it is not acceptable (None: it is)."""
    try:
        output = render(frame.flow.output.from_, ctx.scope_for(frame))
    except (Unresolved, RefSyntaxError) as exc:
        return None, f"flow output unavailable: {exc}"
    contract = frame.flow.output.contract
    errors = contract_errors(ctx.spec, contract, output)
    if errors:
        return output, f"flow output breaks contract {contract}: {'; '.join(errors[:5])}"
    return output, None


def _check_output_early(ctx: RunContext, frame: Frame, step_id: str) -> None:
    """A step that feeds `output.from` just succeeded: once every source is there,
    check the flow output now rather than after the rest of the flow has run."""
    sources = ctx.info(frame.name).output_sources
    if step_id not in sources or any(frame.steps[s]["status"] != "succeeded" for s in sources):
        return
    _output, reason = flow_output(ctx, frame)
    if reason is not None:
        fail_scope(ctx, frame, {"attempt": 0, "reason": reason})


def finish(ctx: RunContext, frame: Frame) -> None:
    """Every step is terminal: produce the flow output, checked against its contract."""
    output, reason = flow_output(ctx, frame)
    if reason is not None:
        fail_scope(ctx, frame, {"attempt": 0, "reason": reason})
        return
    frame.scope["done"] = True
    if frame.parent is None:
        ctx.run.update(status="completed", output=output)
        ctx.emit("completed")
    else:
        parent, run_step = frame.parent
        succeed(ctx, parent, run_step, parent.steps[run_step.id], output, {})


def conclude_fanout(
    ctx: RunContext, frame: Frame, step: FanoutStep, st: dict[str, Any], failure: str | None
) -> None:
    """Every item has finished: the step's output is the items' outputs in order
    (null for items that did not succeed), or it fails with `failure`."""
    items = st["fanout"]["items"]
    output = [it.get("output") if it["status"] == "succeeded" else None for it in items]
    if failure is not None:
        fail_step(ctx, frame, step, st, failure, None, forced=True)
    else:
        succeed(ctx, frame, step, st, output, {})
