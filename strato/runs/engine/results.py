"""Results: what is handed out to agents (the ready steps and consumer fanout items,
each with its dispatch token) and what comes back. A result is accepted only for the
token that was handed out; its usage is settled against every ledger, then its output
is checked against the step's `out` contract and `ensure`s (judged ones included) and,
for an `iterate` step, its `until`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strato.agents.calls import agent_not_found
from strato.flow.spec import DoStep, FanoutStep
from strato.runs.engine import consumer, dispatches, verification
from strato.runs.engine.budgets import overspent, task_ledgers
from strato.runs.engine.checks import check
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.fanouts import is_consumer
from strato.runs.engine.iterate import iterate_again
from strato.runs.engine.ledger import usage_errors
from strato.runs.engine.outcomes import fail_step, succeed
from strato.runs.engine.state import Refused
from strato.runs.engine.table import copy_json, peek

RESULT_KEYS = frozenset({"output", "failure", "usage", "telemetry"})


def ready(ctx: RunContext) -> list[dict[str, Any]]:
    """What may be handed out now, one descriptor per ready step or consumer item."""
    out: list[dict[str, Any]] = []
    if ctx.run["status"] != "running":
        return out
    for frame in ctx.frames():
        steps, by_id = frame.steps, ctx.info(frame.name).steps
        for sid in ctx.in_status(frame, ("ready", "running")):
            step, st = by_id[sid], peek(steps, sid)  # read to hand out, never changed here
            if st["status"] == "ready" and isinstance(step, DoStep):
                out.append(copy_json(_descriptor(ctx, frame, step, st)))  # none of it shared
            elif st["status"] == "running" and is_consumer(step):
                assert isinstance(step, FanoutStep)
                out += [
                    copy_json(consumer.descriptor(ctx, frame, step, it))
                    for it in st["fanout"]["items"]
                    if it["status"] == "ready"
                ]
    return out


def _descriptor(ctx: RunContext, frame: Frame, step: DoStep, st: dict[str, Any]) -> dict[str, Any]:
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
        entry["contract"] = dict(ctx.spec.contracts.get(step.out, {}))
    if "previousFailure" in st:
        entry["previousFailure"] = st["previousFailure"]
    if "context" in st:
        entry["context"] = st["context"]
    return {**entry, **dispatches.handout(st)}


def issued_token(ctx: RunContext, path: str) -> str | None:
    """The dispatch token a ready step or consumer item (`<fanout>/<index>`) holds now."""
    head, _, index = path.rpartition("/")
    if head and index.isdigit():
        _, _, st = ctx.locate(head)
        items = st.get("fanout", {}).get("items", [])
        return items[int(index)].get("dispatchToken") if int(index) < len(items) else None
    _, _, st = ctx.locate(path)
    token = st.get("dispatchToken")
    return token if isinstance(token, str) else None


def step_done(
    ctx: RunContext,
    path: str,
    result: Any,
    token: str | None,
    claims: Mapping[str, Any] | None = None,
    source: str = "step_done",
) -> None:
    """Take a reported result for a ready step or consumer item (`<fanout>/<index>`);
    `Refused` before any change if it is not what was handed out: the token, and any
    of `dispatchId`, `generation`, `contractDigest`, `revisionDigest` in `claims`, must
    be the current hand-out's."""
    ctx.require_running()
    head, _, index = path.rpartition("/")
    if head and index.isdigit():  # `<fanout>/<index>`: a consumer fanout item
        frame, step, st = ctx.locate(head)
        items = st.get("fanout", {}).get("items", [])
        if not (is_consumer(step) and st["status"] == "running" and int(index) < len(items)):
            raise Refused("step_not_ready", f"{path} is not a ready fanout item")
        assert isinstance(step, FanoutStep)
        item = items[int(index)]
        taken = _accept(ctx, path, item, result, token, claims or {}, source)
        consumer.item_done(ctx, frame, step, st, item, result, taken)
        consumer.promote(ctx, frame, step, st)
        return
    frame, step, st = ctx.locate(path)
    if not isinstance(step, DoStep):
        raise Refused("step_not_ready", f"step {path} is not ready (it is {st['status']})")
    taken = _accept(ctx, path, st, result, token, claims or {}, source)
    _settle(ctx, frame, step, st, result, taken)


def _settle(
    ctx: RunContext,
    frame: Frame,
    step: DoStep,
    st: dict[str, Any],
    result: dict[str, Any],
    taken: dispatches.Accepted,
) -> None:
    ledgers = task_ledgers(frame, step, st)
    taken.settle(ctx, ledgers)
    extra = taken.extra()
    if "context" in st:  # what the dispatch was given, kept on its attempt
        extra["context"] = st.pop("context")
    output = result.get("output")
    if "dispatches" in taken.usage:
        fail_step(ctx, frame, step, st, "dispatches are engine-accounted", output, extra=extra)
        return
    if overspent(ctx, frame, step, st, ledgers):
        return
    failure = result.get("failure")
    if failure is not None:
        # the agent's program is not there: no attempt could go otherwise, so none is retried
        missing = agent_not_found(failure)
        reason = failure if missing else f"agent reported failure: {failure}"
        verification.record(ctx, frame, step, st, reason)
        fail_step(ctx, frame, step, st, reason, output, forced=missing, extra=extra)
        return
    scope = ctx.scope_for(frame)
    bindings = {"input": scope.input}
    skip = verification.judged_to_skip(ctx, frame, step, st)
    verdict = check(ctx.spec, step.out, step.ensure, output, bindings, scope, ctx.root, ctx.judge, skip)
    for judged in verdict.judged:
        ctx.emit("judged", frame.prefix + step.id, **judged)
    verification.record(ctx, frame, step, st, verdict.reason, skip)
    if verdict.reason is not None:
        fail_step(ctx, frame, step, st, verdict.reason, output, extra=extra)
        return
    if not iterate_again(ctx, frame, step, st, output, bindings, extra):
        succeed(ctx, frame, step, st, output, extra)


def _accept(
    ctx: RunContext,
    path: str,
    st: dict[str, Any],
    result: Any,
    token: str | None,
    claims: Mapping[str, Any],
    source: str,
) -> dispatches.Accepted:
    """Check a reported result against what was handed out (status, token, claims,
    shape) and take the token. Raises `Refused` before changing anything."""
    if st["status"] != "ready":
        raise Refused("step_not_ready", f"step {path} is not ready (it is {st['status']})")
    if not token:
        raise Refused("stale_token", "step result is stale: missing dispatch token")
    if token != st.get("dispatchToken"):
        raise Refused("stale_token", "step result is stale: the token belongs to a superseded issuance")
    dispatches.check_claims(st, path, claims)
    if source != "engine":
        dispatches.refuse_if_engines(ctx, st.get("dispatchId"))
    if not isinstance(result, dict) or set(result) - RESULT_KEYS:
        raise Refused("invalid_result", "result must be an object with output, failure, usage, telemetry")
    usage = result.get("usage", {})
    problems = usage_errors(usage)
    if problems:
        raise Refused("invalid_result", problems[0])
    telemetry = result.get("telemetry")
    problems = [] if telemetry is None else dispatches.telemetry_errors(telemetry)
    if problems:
        raise Refused("invalid_telemetry", problems[0])
    dispatch_id = dispatches.take(st)
    st["acceptedDispatchToken"] = token
    checked: dict[str, Any] = usage  # usage_errors found nothing wrong with its shape
    return dispatches.Accepted(checked, "usage" in result, telemetry, dispatch_id, source)
