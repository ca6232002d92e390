"""The contract module's data and its check, without a server: every shape the reference
lists is there, and :func:`violations` finds each kind of break."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strato.mcp import contract
from strato.mcp.contract import answer_violations, event_violations, request_violations
from strato.mcp.shapes import parse, violations

REFERENCE = Path(__file__).resolve().parents[4] / "shared" / "reference" / "stratum-mcp-surface.md"

RUNSTATE = ("ready", "running", "completed", "failed", "budget_exhausted")


def test_every_tool_and_event_kind_of_the_reference_is_there() -> None:
    assert len(contract.TOOLS) == 21 and len(contract.EVENTS) == 24
    assert contract.TOOLS["stratum_plan"].statuses == RUNSTATE
    assert contract.TOOLS["stratum_revert"].statuses == (*RUNSTATE, "error")
    assert contract.TOOLS["stratum_flow_cancel_bg"].statuses == (*RUNSTATE[1:], "cancelled")
    assert contract.TOOLS["stratum_guard_transition"].statuses == ("applied", "refused", "replayed", "error")
    reverted = contract.TOOLS["stratum_revert"].variant("failed")
    assert reverted is not None and set(reverted.body.keys()) == {"runId", "failure", "ledger", "reverted_to"}


def test_the_module_says_what_the_reference_says() -> None:
    """Where the reference is beside the checkout (it is not in CI), each table row's
    request, responses and event payload are the module's text, so a new surface version shows."""
    if not REFERENCE.exists():
        pytest.skip("the reference is not beside this checkout (CI has no /work/shared)")
    rows = [
        [cell.strip().replace("\x00", "|") for cell in line.replace("\\|", "\x00").strip("|").split("|")]
        for line in REFERENCE.read_text().splitlines()
        if line.startswith("| `")
    ]
    tools = {
        row[0].split("`")[1]: (row[1].strip("`"), row[2].replace("`", "")) for row in rows if len(row) == 3
    }
    assert tools == {name: (req, resp) for name, req, resp in contract._TOOLS_TEXT}
    events = {row[0].strip("`"): row[1].strip("`") for row in rows if len(row) == 2}
    assert events == dict(contract._EVENTS_TEXT)


def test_violations_names_each_break() -> None:
    ok = {"status": "completed", "runId": "r", "output": None, "ledger": {"spent": {"usd": 1}}}
    assert answer_violations("stratum_resume", ok) == []
    bad = {"status": "completed", "runId": 7, "flowSpent": {}, "ledger": {"spent": [], "budget": {}, "x": 1}}
    assert sorted(answer_violations("stratum_resume", bad)) == sorted(
        [
            "flowSpent: undeclared key",
            "runId: expected string, got number",
            "output: missing",
            "ledger.x: undeclared key",
            "ledger.spent: expected object, got array",
        ]
    )
    assert answer_violations("stratum_resume", {"status": "cancelled", "runId": "r"}) == [
        "status 'cancelled' is none of stratum_resume's responses "
        "(ready, running, completed, failed, budget_exhausted)"
    ]
    assert answer_violations("stratum_resume", [1]) != []


def test_leaf_types_unions_arrays_and_optional_keys() -> None:
    shape = parse("{a: number, b?: string|null, c: {d: boolean}[], e}")
    assert violations({"a": 1.5, "b": None, "c": [{"d": True}], "e": [1]}, shape) == []
    assert violations({"a": True, "c": [], "e": 1}, shape) == ["a: expected number, got boolean"]
    assert violations({"a": 1, "b": 3, "c": [{"d": 1}, {}], "e": 0}, shape) == [
        "b: expected string|null, got number",
        "c[0].d: expected boolean, got number",
        "c[1].d: missing",
    ]
    assert violations({"c": []}, shape) == ["a: missing", "e: missing"]
    with pytest.raises(ValueError, match="unknown type"):
        parse("{a: integer}")


def test_requests_and_events() -> None:
    assert request_violations("stratum_plan", {"spec": {}, "input": {}, "workspaceRoot": "."}) == []
    assert request_violations("stratum_plan", {"spec": {}, "input": {}, "runId": "x"}) == [
        "runId: undeclared key"
    ]
    assert request_violations("stratum_plan", "spec") == ["arguments: expected object, got string"]
    step: dict[str, Any] = {
        "runId": "r",
        "stepId": "s",
        "result": {"output": 1, "telemetry": {"durationMs": 3, "model": "m"}},
    }
    assert request_violations("stratum_step_done", step) == []
    step["result"]["telemetry"] = {"durationMs": "3", "model": "m"}
    assert request_violations("stratum_step_done", step) == [
        "result.telemetry.durationMs: expected number, got string"
    ]

    assert event_violations({"at": "t", "type": "gate_waiting", "stepId": "g"}) == []
    assert event_violations({"at": "t", "type": "gate_waiting", "stepId": "g", "detail": {}}) == [
        "detail: undeclared key"
    ]
    assert event_violations({"type": "subflow_started"}) == [
        "event type 'subflow_started' is not a run event kind of the reference"
    ]
    cancelled = {
        "at": "t",
        "type": "flow_cancelled",
        "detail": {"by": "cli", "burned": {"steps": ["a"], "items": 0}},
    }
    assert event_violations(cancelled) == []
