"""Budgets in a run: a dispatch is reserved against every ledger above a step before it
is handed out, and a ledger that refuses (or that settled usage overspent) ends what it
covers: the flow ledger the run, a subflow ledger its `run` step, a task ledger the step.

The ledgers themselves (limits, debit, what is over) are `strato.runs.engine.ledger`.
"""

from __future__ import annotations

from typing import Any

from strato.flow.spec import AnyStep, RunStep
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.ledger import Ledger
from strato.runs.engine.outcomes import fail_step
from strato.runs.engine.state import ACTIVE


def reserve(
    ctx: RunContext,
    frame: Frame,
    step: AnyStep,
    st: dict[str, Any],
    ledgers: list[Ledger],
    amount: dict[str, float],
) -> bool:
    """Debit `amount` from every ledger, or handle the first ledger that refuses."""
    for ledger in ledgers:
        keys = ledger.blocking(amount)
        if keys:
            breach(ctx, frame, step, st, ledger, keys)
            return False
    for ledger in ledgers:
        ledger.debit(amount)
    return True


def breach(
    ctx: RunContext, frame: Frame, step: AnyStep, st: dict[str, Any], ledger: Ledger, keys: list[str]
) -> None:
    """A ledger refused a reservation or was overspent by settled usage: the flow
    ledger ends the run, a subflow ledger fails its `run` step, a task ledger the
    step itself (no retry: the budget would refuse it again)."""
    reason = f"{ledger.level} budget exhausted ({', '.join(keys)})"
    if ledger.level == "flow":
        failure = {"attempt": 0, "reason": reason}
        if st["status"] in ACTIVE:  # dispatched, but its result cannot be accepted
            st.update(status="failed", failure=failure)
        ctx.run.update(status="budget_exhausted", failure=failure)
        ctx.emit(
            "budget_exhausted",
            frame.prefix + step.id,
            reason=reason,
            spent=dict(ledger.spent),
            limits=ledger.limits(),
        )
    elif ledger.level == "subflow":
        assert frame.parent is not None
        parent, run_step = _owner(frame, ledger)
        owner = parent.steps[run_step.id]
        owner["sub"]["done"] = True  # its ready steps and gates are no longer handed out
        fail_step(ctx, parent, run_step, owner, reason, None, forced=True)
    else:
        fail_step(ctx, frame, step, st, reason, None, forced=True)


def task_ledgers(frame: Frame, step: AnyStep, st: dict[str, Any]) -> list[Ledger]:
    """Every ledger a step spends against: its frame's (flow, subflows) and its own."""
    return [*frame.ledgers, Ledger("task", getattr(step, "budget", None), st["spent"])]


def overspent(
    ctx: RunContext, frame: Frame, step: AnyStep, st: dict[str, Any], ledgers: list[Ledger]
) -> bool:
    """Settled usage may overshoot: breach the first ledger it overspent; True if any."""
    for ledger in ledgers:
        if ledger.over():
            breach(ctx, frame, step, st, ledger, ledger.over())
            return True
    return False


def _owner(frame: Frame, ledger: Ledger) -> tuple[Frame, RunStep]:
    """The frame and `run` step whose subflow ledger this is."""
    while frame.parent is not None:
        parent, run_step = frame.parent
        if parent.steps[run_step.id]["spent"] is ledger.spent:
            return parent, run_step
        frame = parent
    raise AssertionError("subflow ledger without an owner")
