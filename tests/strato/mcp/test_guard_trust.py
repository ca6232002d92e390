"""Over MCP a guard write is the agent's: a client cannot record a human outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strato.agents import trust
from strato.guard import engine
from strato.mcp.dispatch import call
from strato.mcp.registry import Context
from tests.support.mcp import Session, run_server
from tests.support.repos import commit_all, git, write_files
from tropo.git.repo import require


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


def _touching(marker: Path) -> dict[str, Any]:
    statement = f'command_exit_zero(["sh", "-c", "touch {marker}"])'
    return {
        "resource_id": "release:9",
        "graph": {"draft": ["review"], "review": []},
        "initial": "draft",
        "terminal": ["review"],
        "edge_predicates": {"draft->review": [{"id": "build", "statement": statement}]},
    }


MOVE = {"resource_id": "release:9", "from_state": "draft", "to_state": "review", "artifacts": {}}


def test_an_mcp_client_cannot_register_or_run_a_guard_command(workspace: Path, tmp_path: Path) -> None:
    """Issue 25, reproduction 4 over MCP: a client registers a policy whose edge runs a
    command, then moves it. Without `--allow-commands` the register is the tool's error;
    a command policy that is already on the notes ref (registered by code, approved by
    nobody) is refused at the transition. No command ran."""
    write_files(workspace, {".vivary/guard/config.toml": "allow_commands = true\n"})
    commit_all(workspace, "guard: commands on")
    marker = tmp_path / "pwned"
    other = {**_touching(marker), "resource_id": "release:10"}
    engine.register(require(workspace), other)

    async def scenario(s: Session) -> None:
        message, doc = await s.error("stratum_guard_register", _touching(marker))
        assert message.startswith("command_execution_disabled") and "--allow-commands" in message
        assert doc is not None and doc["error_type"] == "command_execution_disabled", doc
        assert f"touch {marker}" in message
        missing, _ = await s.error("stratum_guard_history", {"resource_id": "release:9"})
        assert missing.startswith("guard_not_found")
        message, doc = await s.error("stratum_guard_transition", MOVE)
        assert message.startswith("guard_not_found")
        message, doc = await s.error("stratum_guard_transition", {**MOVE, "resource_id": "release:10"})
        assert doc is not None and doc["error_type"] == "policy_untrusted", doc
        assert "strato guard trust release:10" in message

    run_server(workspace, scenario)
    assert not marker.exists()
    assert trust.approvals(workspace) == []


def test_a_server_that_allows_commands_approves_what_its_client_registers(
    workspace: Path, tmp_path: Path
) -> None:
    """With `allow_commands` on the server's context (`strato mcp --allow-commands`),
    registering is the consent, as at a terminal: the command then runs."""
    write_files(workspace, {".vivary/guard/config.toml": "allow_commands = true\n"})
    commit_all(workspace, "guard: commands on")
    marker = tmp_path / "pwned"
    ctx = Context(workspace, allow_commands=True)
    assert call(ctx, "stratum_guard_register", _touching(marker))["status"] == "registered"
    assert [a.name for a in trust.approvals(workspace)] == ["release:9"]
    assert call(ctx, "stratum_guard_transition", MOVE)["status"] == "applied"
    assert marker.exists()
