"""Over MCP a guard write is the agent's: a client cannot record a human outcome."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.strato.mcp.conftest import Session, run_server


def test_resolved_by_human_from_an_mcp_client_is_refused(workspace: Path) -> None:
    policy = {
        "resource_id": "release:1",
        "graph": {"draft": ["done"]},
        "initial": "draft",
        "terminal": ["done"],
        "edge_predicates": {},
    }
    move = {"resource_id": "release:1", "from_state": "draft", "to_state": "done", "artifacts": {}}

    async def scenario(s: Session) -> None:
        assert (await s.ok("stratum_guard_register", policy))["status"] == "registered"
        message, _ = await s.error("stratum_guard_transition", {**move, "resolved_by": "human"})
        assert message.startswith("invalid_request") and "signed override" in message
        history = await s.ok("stratum_guard_history", {"resource_id": "release:1"})
        assert [e["resolved_by"] for e in history["ledger"]] == ["agent"]
        assert history["current_state"] == "draft"
        applied = await s.ok("stratum_guard_transition", move)
        assert applied["status"] == "applied"
        history = await s.ok("stratum_guard_history", {"resource_id": "release:1"})
        assert [e["resolved_by"] for e in history["ledger"]] == ["agent", "agent"]

    run_server(workspace, scenario)
    assert git(workspace, "notes", "--ref", "refs/notes/vivary/guard", "list").strip()
