"""Every attempt of a run, with its outcome, reason and resolution, read from the run's
own history: retried, routed, gave up, approved, revised (a gate sent it back),
overridden (a gate killed it) and cancelled, in state and in `strato flow audit`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strato.runs.engine.attempts import RESOLUTIONS
from strato.runs.service import Runs
from tests.support.flows import make_workspace

SPEC = """
version: 1
contracts:
  A: {text: string}
flows:
  entry: main
  main:
    input: {}
    max_rounds: 3
    output: {from: "${w.output}", contract: A}
    steps:
      - id: w
        do: "write"
        out: A
        attempts: 2
        ensure:
          - expr: "result.text != 'bad'"
      - id: review
        after: [w]
        gate: {on_approve: null, on_revise: w, on_kill: null}
"""

ROUTED = """
version: 1
contracts:
  A: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${fix.output}", contract: A}
    steps:
      - id: w
        do: "write"
        out: A
        attempts: 1
        on_fail: fix
        ensure:
          - expr: "result.text != 'bad'"
      - id: fix
        do: "fix"
        out: A
"""


def _runs(tmp_path: Path) -> Runs:
    ws = make_workspace(tmp_path)
    ws.agents([])
    return ws.runs()


def _report(runs: Runs, run_id: str, step: str, text: str) -> None:
    token = runs.load(run_id).state["scope"]["steps"][step]["dispatchToken"]
    runs.done(run_id, step, token, {"output": {"text": text}})


def _rows(runs: Runs, run_id: str) -> list[tuple[Any, ...]]:
    return [(r["stepId"], r["outcome"], r["resolution"]) for r in runs.audit(run_id)["attempts"]]


def test_a_retry_then_an_approval_then_a_revise_round(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    run_id = runs.plan(SPEC, {}, "r").snap.run_id
    _report(runs, run_id, "w", "bad")
    _report(runs, run_id, "w", "good")
    runs.gate(run_id, "review", "revise", note="shorter", resolved_by="human", via="terminal")
    _report(runs, run_id, "w", "short")
    runs.gate(run_id, "review", "approve", resolved_by="human", via="terminal")
    assert _rows(runs, run_id) == [
        ("w", "failed", "retried"),
        ("w", "succeeded", "revised"),
        ("review", "revise", "revised"),
        ("w", "succeeded", "approved"),
        ("review", "approve", "approved"),
    ]
    audit = runs.audit(run_id)
    first = audit["attempts"][0]
    assert first["attempt"] == 1 and first["reason"] == "ensure[0] failed: result.text != 'bad'"
    assert audit["attempts"][2]["reason"] == "shorter" and audit["attempts"][2]["resolvedBy"] == "human"
    state = audit["steps"]["w"]["attempts"]  # the current round's attempts, in state
    assert [(a["outcome"], a["resolution"]) for a in state] == [("succeeded", "approved")]
    assert {r["resolution"] for r in audit["attempts"]} <= set(RESOLUTIONS)


def test_a_failure_with_no_retry_left_is_routed_or_gives_up(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    run_id = runs.plan(ROUTED, {}, "routed").snap.run_id
    _report(runs, run_id, "w", "bad")
    _report(runs, run_id, "fix", "bad")  # fix has no ensure: accepted
    assert _rows(runs, run_id) == [("w", "failed", "routed"), ("fix", "succeeded", "approved")]
    assert runs.load(run_id).state["scope"]["steps"]["w"]["attempts"][0]["resolution"] == "routed"

    run_id = runs.plan(SPEC, {}, "gives-up").snap.run_id
    _report(runs, run_id, "w", "bad")
    _report(runs, run_id, "w", "bad")
    assert _rows(runs, run_id)[-1] == ("w", "failed", "gave up")
    assert runs.audit(run_id)["status"] == "failed"


def test_a_kill_is_overridden_and_a_cancel_cancels_what_was_handed_out(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    run_id = runs.plan(SPEC, {}, "killed").snap.run_id
    _report(runs, run_id, "w", "fine")
    runs.gate(run_id, "review", "kill", resolved_by="human", via="terminal")
    assert _rows(runs, run_id)[-1] == ("review", "kill", "overridden")
    state = runs.load(run_id).state["scope"]["steps"]["review"]["attempts"]
    assert state[-1]["resolution"] == "overridden"

    run_id = runs.plan(SPEC, {}, "cancelled").snap.run_id
    runs.cancel(run_id, "superseded")
    [row] = runs.audit(run_id)["attempts"]
    assert (row["stepId"], row["outcome"], row["resolution"], row["reason"]) == (
        "w", "cancelled", "cancelled", "superseded"
    )


def test_strato_flow_audit_prints_the_attempts(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([])
    runs = ws.runs()
    run_id = runs.plan(SPEC, {}, "shown").snap.run_id
    _report(runs, run_id, "w", "bad")
    text = ws.strato("flow", "audit", run_id, check=True).stdout
    assert "attempts:" in text
    first, second = [ln.split() for ln in text.splitlines() if ln.strip().startswith("w ")]
    assert first[:4] == ["w", "#1", "failed", "retried"] and "result.text" in first
    assert second[:4] == ["w", "#2", "pending", "-"]  # handed out again, not reported yet


def test_strato_flow_show_lists_the_current_rounds_attempts(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([])
    runs = ws.runs()
    run_id = runs.plan(SPEC, {}, "show").snap.run_id
    _report(runs, run_id, "w", "bad")
    _report(runs, run_id, "w", "good")
    code, view = ws.strato_json("flow", "show", run_id)
    assert code == 0
    assert [(r["stepId"], r["attempt"], r["outcome"], r["resolution"]) for r in view["attempts"]] == [
        ("w", 1, "failed", "retried"), ("w", 2, "succeeded", "approved"),
    ]
    text = ws.strato("flow", "show", run_id, check=True).stdout
    assert "tried  w #1 failed -> retried  ensure[0] failed" in text
