"""A run as Stratum's MCP contract shows it (surface version 6): the five RUNSTATE
variants, the ledger, the checkpoint answers, the audit and the event pages of a poll.
The CLI's `--json` documents (:mod:`strato.runs.views.documents`) say more; these say exactly
what a client written for Stratum reads.

How our run statuses read on the wire: a running run with steps or gates to hand out is
`ready` (a waiting gate is an entry of `ready` with `kind: "gate"`), without any it is
`running`; a cancelled run is `failed` with the reason `cancelled: ...` (the contract has
no cancelled run; its `flow_cancelled` event says who cancelled and what was burned)."""

from __future__ import annotations

from typing import Any

from strato.runs.engine.machine import Engine
from strato.runs.engine.state import TERMINAL, Refused
from strato.runs.service import Runs
from strato.runs.store import RunSnapshot
from strato.runs.views.events import project

PAGE = 500  # events per poll answer at most; nextCursor says where the next page starts
# an ended run's status on the wire (the contract has no cancelled run)
ENDED = {s: s for s in ("completed", "failed", "budget_exhausted")} | {"cancelled": "failed"}


def ledger(eng: Engine) -> dict[str, Any]:
    """``LEDGER``: what the run has spent, and the entry flow's budget if it has one."""
    root = next(iter(eng.frames()))
    out: dict[str, Any] = {"spent": dict(eng.run["flowSpent"])}
    limits = root.ledgers[0].limits() if root.ledgers else {}
    if limits:
        out["budget"] = limits
    return out


def failure(state: dict[str, Any]) -> dict[str, Any]:
    """``FAILURE`` of an ended run (a cancel reads `cancelled` or `cancelled: <reason>`)."""
    raw = state.get("failure") or {}
    reason = str(raw.get("reason", ""))
    if state["status"] == "cancelled":
        reason = "cancelled" if reason in ("", "cancelled") else f"cancelled: {reason}"
    attempt = raw.get("attempt")
    return {"attempt": attempt if isinstance(attempt, int) else 0, "reason": reason}


def gate_entries(eng: Engine) -> list[dict[str, Any]]:
    """The gates waiting for a decision, as entries of `ready` (tokens are withheld from
    clients the policy does not let decide, by :func:`strato.runs.views.documents.withhold_gate_tokens`)."""
    return [
        {
            "id": frame.prefix + sid,
            "kind": "gate",
            "flow": frame.name,
            "round": frame.scope["rounds"],
            "gateToken": st["gateToken"],
        }
        for frame in eng.frames()
        for sid, st in frame.steps.items()
        if st["status"] == "waiting_gate" and "gateToken" in st
    ]


def runstate(runs: Runs, snap: RunSnapshot) -> dict[str, Any]:
    """The RUNSTATE variant the run is in."""
    eng = runs.engine(snap, judge=False)
    state = snap.state
    base: dict[str, Any] = {"runId": snap.run_id}
    if state["status"] == "running":
        ready = [*eng.ready(), *gate_entries(eng)]
        if ready:
            return {"status": "ready", **base, "ready": ready, "ledger": ledger(eng)}
        return {"status": "running", **base, "ledger": ledger(eng)}
    status = ENDED[state["status"]]
    if status == "completed":
        return {"status": status, **base, "output": state.get("output"), "ledger": ledger(eng)}
    return {"status": status, **base, "failure": failure(state), "ledger": ledger(eng)}


def _ended_status(state: dict[str, Any]) -> str:
    """The status audit and poll answer with: they have no `ready`."""
    return ENDED.get(state["status"], "running")


def events(runs: Runs, run_id: str) -> list[dict[str, Any]]:
    """Every wire event of the run, from its ref's history."""
    return project(runs.store.history(run_id), lambda commit: runs.store.at(run_id, commit).state)


def audit(runs: Runs, run_id: str) -> dict[str, Any]:
    snap = runs.load(run_id)
    state = snap.state
    out: dict[str, Any] = {
        "status": _ended_status(state),
        "runId": snap.run_id,
        "events": events(runs, snap.run_id),
        "steps": state["scope"]["steps"],
        "flowSpent": state["flowSpent"],
    }
    if "output" in state:
        out["output"] = state["output"]
    return out


def poll(runs: Runs, run_id: str, cursor: int = 0) -> dict[str, Any]:
    """Events from ``cursor`` (an index into the run's events, 0 the first), at most
    :data:`PAGE`; a cursor below 0 or past the last event is refused."""
    snap = runs.load(run_id)
    every = events(runs, snap.run_id)
    if cursor < 0 or cursor > len(every):
        raise Refused(
            "invalid_cursor",
            f"cursor {cursor} is outside the run's events (0..{len(every)}): poll from nextCursor",
        )
    page = every[cursor : cursor + PAGE]
    state = snap.state
    out: dict[str, Any] = {
        "status": _ended_status(state),
        "runId": snap.run_id,
        "events": page,
        "nextCursor": cursor + len(page),
        "ledger": ledger(runs.engine(snap, judge=False)),
    }
    if "output" in state:
        out["output"] = state["output"]
    if state["status"] in ENDED and state["status"] != "completed":
        out["failure"] = failure(state)
    return out


def committed(runs: Runs, run_id: str, label: str) -> dict[str, Any]:
    """Checkpoint the run: ``step_number`` counts the entry flow's finished steps and
    ``current_step_id`` is its first step still in play (ready, running or at a gate)."""
    snap = runs.commit(run_id, label)
    root = next(iter(runs.engine(snap, judge=False).frames()))
    states = [root.steps[step.id]["status"] for step in root.flow.typed_steps]
    current = next(
        (
            step.id
            for step, st in zip(root.flow.typed_steps, states, strict=True)
            if st not in (*TERMINAL, "pending")
        ),
        None,
    )
    return {
        "status": "committed",
        "flow_id": snap.run_id,
        "label": label.strip(),
        "step_number": sum(st in TERMINAL for st in states),
        "current_step_id": current,
        "checkpoints": runs.store.checkpoints(snap.run_id),
    }


def reverted(runs: Runs, run_id: str, label: str) -> dict[str, Any]:
    outcome = runs.revert(run_id, label)
    return {**runstate(runs, outcome.snap), "reverted_to": label}
