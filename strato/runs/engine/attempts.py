"""Every attempt of a run, read back from its events: each step's tries, gate decisions
and dispatches with their outcome, their reason and their resolution (what happened
next: retried, routed, gave up, approved, revised, overridden, cancelled).

The run's state keeps only the attempts of each step's current epoch (a gate's revise
starts the steps over); the events of the run's history keep them all, so this view is
built from the events alone and covers every round.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

RESOLUTIONS = ("retried", "routed", "gave up", "approved", "revised", "overridden", "cancelled")
_GATE = {"approve": "approved", "revise": "revised", "kill": "overridden"}


def attempt_rows(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per attempt, in the order they began."""
    rows: list[dict[str, Any]] = []
    open_: dict[str, dict[str, Any]] = {}  # step -> its row still waiting for an end
    last: dict[str, dict[str, Any]] = {}  # step -> its latest ended row
    for ev in events:
        kind, step, detail = ev["type"], ev.get("stepId"), ev.get("detail", {})
        if kind in ("ready", "gate_waiting") and step:
            row = {"stepId": step, "attempt": detail.get("attempt"), "at": ev["at"], "outcome": "pending",
                   "reason": None, "resolution": None}
            if kind == "gate_waiting":
                row.update(attempt=None, round=detail.get("round"), gate=True)
            rows.append(row)
            open_[step] = row
        elif kind == "result" and step:
            row = open_.pop(step) if step in open_ else _row(rows, step, ev)
            _result(row, detail)
            last[step] = row
        elif kind == "routed" and step and step in last and last[step]["outcome"] == "failed":
            last[step]["resolution"] = "routed"
        elif kind == "gate_resolved" and step:
            row = open_.pop(step) if step in open_ else _row(rows, step, ev)
            decision = str(detail.get("decision"))
            row.update(outcome=decision, resolution=_GATE.get(decision), reason=detail.get("note"),
                       resolvedBy=detail.get("resolvedBy"))
            last[step] = row
        elif kind == "step_reset":
            for reset in detail.get("reset", []):
                prior = last.get(reset.get("stepId"))
                if prior is not None and prior["resolution"] == "approved":
                    prior["resolution"] = "revised"
        elif kind == "flow_cancelled":
            for row in open_.values():
                row.update(outcome="cancelled", resolution="cancelled", reason=detail.get("reason"))
            open_.clear()
    return rows


def _row(rows: list[dict[str, Any]], step: str, ev: dict[str, Any]) -> dict[str, Any]:
    """A row for an end whose start was not dispatched (a set or evaluate step)."""
    row = {"stepId": step, "attempt": ev.get("detail", {}).get("attempt"), "at": ev["at"],
           "outcome": "pending", "reason": None, "resolution": None}
    rows.append(row)
    return row


def _result(row: dict[str, Any], detail: dict[str, Any]) -> None:
    if detail.get("success"):
        row.update(outcome="succeeded", resolution="approved", reason=None)
        return
    outcome = "refused" if detail.get("refused") else "failed"
    resolution = "retried" if detail.get("retry") else "gave up"
    row.update(outcome=outcome, reason=detail.get("reason"), resolution=resolution)
    if "context" in detail:
        row["context"] = detail["context"]


def state_rows(scope: dict[str, Any], prefix: str = "") -> list[dict[str, Any]]:
    """The attempts a run's state keeps (each step's current round, subflows included),
    as rows of the same shape: what `strato flow show` lists."""
    rows: list[dict[str, Any]] = []
    for sid, st in scope["steps"].items():
        for a in st.get("attempts", []):
            rows.append({"stepId": prefix + sid, "attempt": a.get("attempt"), "at": a.get("at"),
                         "outcome": a.get("outcome"), "reason": a.get("reason"),
                         "resolution": a.get("resolution")})
        if "sub" in st:
            rows += state_rows(st["sub"], f"{prefix}{sid}/")
    return rows
