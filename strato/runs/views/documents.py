"""The JSON documents the run operations answer with, shared by the CLI's `--json` and
the MCP server: one place decides what a run looks like from outside."""

from __future__ import annotations

from typing import Any

from strato.agents import trust
from strato.agents.config import AgentConfigError, GatePolicy
from strato.runs.dispatch.fanout import run_fanout
from strato.runs.engine.attempts import state_rows
from strato.runs.engine.machine import Engine
from strato.runs.engine.state import USAGE_CODES
from strato.runs.engine.table import peek
from strato.runs.layout import LayoutError
from strato.runs.service import Runs, SpecInvalid
from strato.runs.store import AmbiguousRunId, CheckpointNotFound, Outcome, RunNotFound, RunSnapshot
from tropo.fs.private import Refusal
from tropo.git.repo import NotARepository

EXPECTED_ERRORS = (Refusal, CheckpointNotFound, RunNotFound, SpecInvalid, AgentConfigError, NotARepository,
                   trust.Untrusted, trust.TrustError, LayoutError)


def describe_error(exc: BaseException) -> tuple[int, str, dict[str, Any]]:
    """An expected run error as (exit code, one-line message, JSON payload)."""
    if isinstance(exc, Refusal):  # strato's Refused, or a folder planted under .git/vivary
        return 2 if exc.code in USAGE_CODES else 1, str(exc), {"code": exc.code}
    if isinstance(exc, CheckpointNotFound):
        return 1, str(exc), {"code": "checkpoint_not_found", "available": exc.available}
    if isinstance(exc, AmbiguousRunId):
        return 2, str(exc), {"code": "ambiguous_run_id", "candidates": exc.candidates}
    if isinstance(exc, RunNotFound):
        return 1, str(exc), {"code": "run_not_found"}
    if isinstance(exc, SpecInvalid):
        errors = [e.to_json() for e in exc.errors]
        return 2, f"invalid spec: {exc}", {"code": "spec_invalid", "errors": errors}
    if isinstance(exc, trust.Untrusted):
        return 1, str(exc), {"code": "untrusted"}
    if isinstance(exc, AgentConfigError | NotARepository | trust.TrustError):
        return 2, str(exc), {"code": "config_error"}
    if isinstance(exc, LayoutError):  # a newer version's run, or a damaged one
        return 1, str(exc), {"code": "run_unreadable"}
    raise TypeError(f"not an expected run error: {exc!r}") from exc


def summary(runs: Runs, snap: RunSnapshot) -> dict[str, Any]:
    """The stable view of a run: status, what is ready, which gates wait."""
    eng = runs.engine(snap, judge=False)
    state = snap.state
    out: dict[str, Any] = {
        "runId": snap.run_id,
        "flow": state["flow"],
        "status": state["status"],
        "head": snap.head,
        "ready": eng.ready(),
        "gates": _waiting_gates(eng),
        "flowSpent": state["flowSpent"],
    }
    for key in ("output", "failure"):
        if key in state:
            out[key] = state[key]
    return out


def _waiting_gates(eng: Engine) -> list[dict[str, Any]]:
    """Gates a decision can still be given to: cancelling a run takes their tokens."""
    return [
        {
            "stepId": frame.prefix + sid,
            "flow": frame.name,
            "gateToken": st["gateToken"],
            "round": frame.scope["rounds"],
        }
        for frame in eng.frames()
        for sid in eng.in_status(frame, ("waiting_gate",))
        if "gateToken" in (st := peek(frame.steps, sid))
    ]


def asked_gates(runs: Runs, snap: RunSnapshot) -> list[dict[str, Any]]:
    """The waiting gates, each with its `subject`: the output of every step it comes after
    (null for one that produced none), so whoever decides sees what they are asked about."""
    eng = runs.engine(snap, judge=False)
    gates = {g["stepId"]: g for g in _waiting_gates(eng)}
    for path, gate in gates.items():
        frame, step, _ = eng.locate(path)
        gate["subject"] = {
            frame.prefix + dep: frame.steps.get(dep, {}).get("output") for dep in step.deps_declared
        }
    return list(gates.values())


def outcome_view(runs: Runs, outcome: Outcome) -> dict[str, Any]:
    """A run after one operation, with the events that operation produced."""
    return {**summary(runs, outcome.snap), "events": outcome.events}


def run_due_fanouts(runs: Runs, run_id: str) -> None:
    """Run the engine-dispatched fanouts that are due (the caller holds the run's runner
    lock: `strato.runs.background.runner.carry_on`)."""
    snap = runs.load(run_id)
    for frame, step, _ in runs.engine(snap, judge=False).running_fanouts():
        run_fanout(runs, snap.run_id, frame.prefix + step.id)


def usage_view(runs: Runs, outcome: Outcome, dispatch_id: str) -> dict[str, Any]:
    """A usage report's answer: `debited` with the `seq` it was recorded under, or
    `duplicate` (already debited, nothing changed) with the first debit's `seq`; the
    flow ledger as it now stands."""
    state = outcome.snap.state
    record = state.get("dispatches", {}).get(dispatch_id, {})
    debited = any(
        ev["type"] == "usage_debit" and ev.get("detail", {}).get("dispatchId") == dispatch_id
        for ev in outcome.events
    )
    limits = runs.engine(outcome.snap, judge=False).root_frame.ledgers[0].limits()
    return {
        "status": "debited" if debited else "duplicate",
        "runId": outcome.snap.run_id,
        "dispatchId": dispatch_id,
        "seq": record.get("debitSeq"),
        "ledger": {"spent": state["flowSpent"], **({"budget": limits} if limits else {})},
        "runStatus": state["status"],
    }


def commit_view(runs: Runs, run_id: str, label: str) -> dict[str, Any]:
    snap = runs.commit(run_id, label)
    return {
        "status": "committed",
        "runId": snap.run_id,
        "label": label.strip(),
        "head": snap.head,
        "checkpoints": runs.store.checkpoints(snap.run_id),
    }


def list_view(runs: Runs) -> dict[str, Any]:
    rows = []
    for run_id in runs.store.run_ids():
        try:
            state = runs.load(run_id).state
        except LayoutError:  # listed all the same: `show` says why
            state = {"flow": None, "status": "unreadable"}
        row = {"runId": run_id, "flow": state["flow"], "status": state["status"]}
        rows.append({**row, "createdAt": state.get("createdAt")})
    return {"runs": rows}


def show_view(runs: Runs, run_id: str) -> dict[str, Any]:
    snap = runs.load(run_id)
    view = summary(runs, snap)
    view["gates"] = asked_gates(runs, snap)
    steps = snap.state["scope"]["steps"]
    view["steps"] = {k: peek(steps, k)["status"] for k in steps}
    view["checkpoints"] = runs.store.checkpoints(snap.run_id)
    view["attempts"] = state_rows(snap.state["scope"])
    return view


def rejection(outcome: Outcome, step: str) -> dict[str, Any] | None:
    """Why a reported result was not accepted (a failed ensure, a contract break), from
    the `result` event the report produced; None when it was accepted."""
    for ev in outcome.events:
        detail = ev.get("detail", {})
        if ev["type"] == "result" and ev.get("stepId") == step and detail.get("success") is False:
            return {"stepId": step, "reason": detail.get("reason", ""), "retry": bool(detail.get("retry"))}
    return None


def withhold_gate_tokens(doc: Any, policy: GatePolicy) -> Any:
    """`doc` as an MCP client may see it: a gate token is the power to decide that gate,
    so it stays only in a gate entry (of `gates`, or of `ready` on Stratum's wire) that
    the policy lets MCP decide; every other `gateToken` (run state in an audit, say) is
    dropped, and a withheld one is marked."""

    def visible(gate: Any) -> Any:
        if not isinstance(gate, dict) or "gateToken" not in gate:
            return strip(gate)
        own = str(gate.get("stepId", gate.get("id", ""))).rpartition("/")[2]
        if policy.mcp_may_resolve(str(gate.get("flow", "")), own):
            return gate
        decider = "person" if policy.needs_person(str(gate.get("flow", "")), own) else "cli"
        return {**{k: v for k, v in gate.items() if k != "gateToken"}, "decidedAt": decider}

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "gateToken"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    if not isinstance(doc, dict):
        return strip(doc)
    listed = ("gates", "ready")
    out = {k: strip(v) for k, v in doc.items() if k not in listed}
    for key in listed:
        if key in doc:
            out[key] = [visible(g) for g in doc[key]] if isinstance(doc[key], list) else strip(doc[key])
    return out


def failed(view: dict[str, Any]) -> bool:
    """A run that ended without its output: the CLI exits 1 for it."""
    return view["status"] in ("failed", "budget_exhausted", "cancelled")
