"""Gates: a gate step waits with a token; a decision (approve, revise, kill) that names
the current token moves the flow on. Approve and kill may route to a target; revise
resets the target's closure to a new epoch for another round, within the flow's and
the gate's `max_rounds`; a kill with no target ends the run.

Who may decide (a person at a terminal, an agent over MCP) is the service's policy;
the engine records who did, as the caller reports it.
"""

from __future__ import annotations

from typing import Any

from strato.flow.spec import GateStep
from strato.runs.engine import verification
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.iterate import carry_on_revise
from strato.runs.engine.outcomes import fail_scope
from strato.runs.engine.state import RESOLVERS, Refused, fresh_step, new_token

DECISIONS = ("approve", "revise", "kill")


def wait(ctx: RunContext, frame: Frame, step: GateStep, st: dict[str, Any]) -> None:
    st.update(status="waiting_gate", gateToken=new_token())
    ctx.emit("gate_waiting", frame.prefix + step.id, round=frame.scope["rounds"])


def resolve(
    ctx: RunContext,
    path: str,
    decision: str,
    token: str | None,
    note: str | None = None,
    resolved_by: str = "agent",
    client: str | None = None,
) -> None:
    """Apply one decision to the waiting gate at `path`; `Refused` before any change
    if it is not waiting, the token is stale, or the decision is unknown."""
    ctx.require_running()
    frame, step, st = ctx.locate(path)
    if not isinstance(step, GateStep):
        raise Refused("not_a_gate_step", f"step {path} is not a gate")
    if st["status"] != "waiting_gate":
        raise Refused("gate_not_waiting", f"gate {path} is not waiting (it is {st['status']})")
    if not token or token != st.get("gateToken"):
        raise Refused("stale_token", "gate decision is stale: the token does not match the waiting gate")
    if decision not in DECISIONS:
        raise Refused("invalid_decision", f"unknown decision {decision!r}")
    if resolved_by not in RESOLVERS:
        raise Refused("invalid_decision", f"resolved_by must be one of {', '.join(RESOLVERS)}")
    target = {"approve": step.gate.on_approve, "revise": step.gate.on_revise, "kill": step.gate.on_kill}[
        decision
    ]
    by = {"resolvedBy": resolved_by, **({"client": client} if client else {})}
    ctx.emit(
        "gate_resolved", path, decision=decision, target=target, **by, **({"note": note} if note else {})
    )
    st.pop("gateToken", None)
    if decision != "approve":
        verification.override(ctx, frame, step, decision, resolved_by)
    if decision == "revise":
        _revise(ctx, frame, step, st, target)
    else:
        _approve_or_kill(ctx, frame, step, st, decision, target, by)


def _approve_or_kill(
    ctx: RunContext,
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
    resolution = {"outcome": decision, "resolution": "approved" if decision == "approve" else "overridden"}
    record = {"attempt": len(st["attempts"]) + 1, "at": ctx.clock(), "decision": decision, **by, **resolution}
    st["attempts"].append(record)
    if decision == "kill" and target is None:
        st.update(status="failed", failure=failure)
        ctx.run.update(status="failed", failure={**failure, "killed": True})
        ctx.emit("failed", frame.prefix + step.id, reason=failure["reason"], killed=True)
        return
    st["status"] = "succeeded"
    if target is not None:
        frame.steps[target]["routed"] = {"attempt": 0, "reason": f"gate {decision}"}
        ctx.emit("routed", frame.prefix + step.id, target=frame.prefix + target)


def _revise(ctx: RunContext, frame: Frame, step: GateStep, st: dict[str, Any], target: str | None) -> None:
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
        fail_scope(ctx, frame, {"attempt": 0, "reason": "gate revision rounds exhausted"})
        return
    closure = ctx.info(frame.name).graph.closure(target)
    if frame.parent is None:
        carry_on_revise(ctx, frame, step, total, closure)
    reset, dropped = [], []
    for sid in [s.id for s in frame.flow.typed_steps if s.id in closure]:
        old = frame.steps[sid]
        if "sub" in old:  # a `run` step whose subflow had started: that subflow is gone
            dropped.append(frame.prefix + sid)
        frame.steps[sid] = fresh_step(old["epoch"] + 1)
        reset.append({"stepId": frame.prefix + sid, "fromEpoch": old["epoch"], "toEpoch": old["epoch"] + 1})
    frame.scope["rounds"] = total
    frame.steps[step.id]["iterations"] = iterations + 1
    path = frame.prefix + step.id
    ctx.emit("step_reset", path, reason="revise", reset=reset, subflowsDropped=dropped, round=total)
