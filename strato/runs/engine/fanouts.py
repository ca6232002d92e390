"""A fanout step inside the engine: starting it (its items rendered from `over`),
listing the engine-mode fanouts the service must run, and settling one from the items
the service ran and merged. Consumer-mode items are advanced by `strato.runs.engine.consumer`;
engine-mode items run outside the engine, in `strato.runs.dispatch.fanout`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strato.flow.refs import RefSyntaxError, Scope, Unresolved, render
from strato.flow.spec import AnyStep, FanoutStep
from strato.runs.engine import consumer
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.outcomes import conclude_fanout, fail_step
from strato.runs.engine.table import peek


@dataclass
class FanoutOutcome:
    """What the service's run of a fanout's items came to: the items and, if the step
    failed (require not met, pre-merge or merge failed), why."""

    items: list[dict[str, Any]]
    failure: str | None


def is_consumer(step: AnyStep) -> bool:
    return isinstance(step, FanoutStep) and step.fanout.dispatch == "consumer"


def start(ctx: RunContext, frame: Frame, step: FanoutStep, st: dict[str, Any], scope: Scope) -> None:
    try:
        items = render(step.fanout.over, scope)
    except (Unresolved, RefSyntaxError) as exc:
        fail_step(ctx, frame, step, st, f"fanout.over: {exc}", None, forced=True)
        return
    if not isinstance(items, list):
        fail_step(ctx, frame, step, st, "fanout.over must resolve to an array", None, forced=True)
        return
    by_consumer = is_consumer(step)
    extra: dict[str, Any] = {"stage": 0, "attempts": []} if by_consumer else {}
    st.update(
        status="running",
        fanout={
            "items": [{"index": i, "item": v, "status": "pending", **extra} for i, v in enumerate(items)]
        },
    )
    ctx.emit("fanout_started", frame.prefix + step.id, items=len(items), dispatch=step.fanout.dispatch)
    if by_consumer:
        consumer.promote(ctx, frame, step, st)


def running(ctx: RunContext) -> list[tuple[Frame, FanoutStep, dict[str, Any]]]:
    """The engine-mode fanouts in flight, their states to read only (not taken: a
    caller that changes one locates it): the service runs their items."""
    out = []
    for frame in ctx.frames():
        by_id = ctx.info(frame.name).steps
        for sid in ctx.in_status(frame, ("running",)):
            step = by_id[sid]
            if isinstance(step, FanoutStep) and not is_consumer(step):
                out.append((frame, step, peek(frame.steps, sid)))
    return out


def finish(ctx: RunContext, path: str, outcome: FanoutOutcome) -> None:
    """Settle a fanout whose items have all run (the service ran and merged them)."""
    frame, step, st = ctx.locate(path)
    assert isinstance(step, FanoutStep)
    st["fanout"]["items"] = outcome.items
    conclude_fanout(ctx, frame, step, st, outcome.failure)
