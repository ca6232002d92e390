"""An MCP client that controls every request byte, and another agent that writes files
in the repository, against the real `strato mcp` through the SDK's stdio client."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from strato.agentruns.store import BoundedStream
from tests.support.agents import agent_workspace
from tests.support.mcp import GATE_SPEC, Session, run_server
from tests.support.repos import commit_all, write_files

SECRET = "the victim's secret\n"


@pytest.fixture
def workspace(repo_dir: Path) -> Iterator[Path]:
    """The agent runs' workspace (scripted agents), not this folder's graph workspace."""
    yield from agent_workspace(repo_dir)


def test_a_stream_turned_into_a_symlink_is_neither_read_nor_written_through(
    workspace: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text(SECRET)

    async def scenario(s: Session) -> None:
        _, crash = await s.error("stratum_agent_run", {"agent": "crash", "prompt": "x", "cwd": "."})
        assert crash is not None
        stream = Path(crash["streamPath"])
        assert "half an answer" in crash["textTail"]
        stream.unlink()
        stream.symlink_to(victim)
        polled = await s.ok("stratum_agent_poll", {"runId": crash["runId"]})
        assert polled["status"] == "error" and SECRET.strip() not in polled["textTail"]

    run_server(workspace, scenario)

    planted = tmp_path / "stream.log"  # the writer's side: a symlink and a hard link planted
    planted.symlink_to(victim)
    linked = tmp_path / "stderr.log"
    os.link(victim, linked)
    for path in (planted, linked):
        sink = BoundedStream(path, limit=8)
        sink.write(b"agent output that rotates")
        sink.write(b"more")
        sink.close()
        assert not path.is_symlink() and path.read_bytes() == b"more"
    assert victim.read_text() == SECRET


def test_paths_out_of_the_workspace_are_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Leak\n\n{SECRET}")
    write_files(workspace, {"tasks/one.md": "# One\n\nDo one thing.\n"})
    (workspace / "tasks" / "two.md").symlink_to(outside / "secret.md")
    (workspace / "away").symlink_to(outside)
    commit_all(workspace, "tasks")

    async def scenario(s: Session) -> None:
        for bad in ("away", "../outside", str(outside), "tasks/\x00"):
            _, doc = await s.error("stratum_agent_run", {"agent": "steady", "prompt": "x", "cwd": bad})
            text, doc = await s.error("stratum_compile_speckit", {"tasks_dir": bad})
            assert doc is not None and doc["status"] == "error", text
            text, doc = await s.error("stratum_plan", {"spec": "x", "input": {}, "workspaceRoot": bad})
        text, doc = await s.error("stratum_compile_speckit", {"tasks_dir": "tasks"})
        assert doc is not None and SECRET.strip() not in text + str(doc), doc
        for bad in ("../../HEAD", "/etc/passwd", "a\x00b", "x" * 5000, "ar-" + "0" * 12 + "/.."):
            for tool in ("stratum_agent_poll", "stratum_cancel_agent_run"):
                doc = await s.ok(tool, {"runId": bad})
                assert doc["status"] == "not_found"
            for tool in ("stratum_flow_bg_poll", "stratum_flow_cancel_bg"):
                await s.error(tool, {"runId": bad})
        assert not (outside / "agent-runs").exists()

    run_server(workspace, scenario)


def test_a_gate_policy_written_in_the_working_tree_grants_nothing(repo_dir: Path) -> None:
    write_files(repo_dir, {"specs/review.yaml": GATE_SPEC, ".vivary/agents.toml": '[gates]\nmcp = "view"\n'})
    commit_all(repo_dir, "gates are a person's")
    (repo_dir / ".vivary" / "agents.toml").write_text('[gates]\nmcp = "resolve"\n')  # another agent's edit

    async def scenario(s: Session) -> None:
        plan = await s.ok("stratum_plan", {"spec": GATE_SPEC, "input": {"topic": "t"}})
        good = {"output": {"text": "final", "score": 0.9}}
        at_gate = await s.ok("stratum_step_done", {"runId": plan["runId"], "stepId": "work", "result": good})
        assert "gateToken" not in at_gate["ready"][0]
        decide = {"runId": plan["runId"], "stepId": "review", "decision": "approve"}
        _, doc = await s.error("stratum_gate_resolve", decide)
        assert doc is not None and doc["error_type"] == "gate_not_allowed_over_mcp"
        assert (await s.ok("stratum_resume", {"runId": plan["runId"]}))["status"] == "ready"

    run_server(repo_dir, scenario)


def test_agent_run_folders_planted_as_symlinks_are_neither_read_nor_written_through(
    workspace: Path, tmp_path: Path
) -> None:

    outside = tmp_path / "outside"
    outside.mkdir()
    home = workspace / ".git" / "vivary" / "agent-runs"
    home.parent.mkdir(parents=True, exist_ok=True)
    home.symlink_to(outside, target_is_directory=True)
    run = {"agent": "steady", "prompt": "now", "cwd": ".", "background": True}

    async def planted_home(s: Session) -> None:
        text, doc = await s.error("stratum_agent_run", run)
        assert doc is not None and doc["error_type"] == "planted_link" and "is a symlink" in text

    run_server(workspace, planted_home)
    assert list(outside.iterdir()) == []
    home.unlink()
    moved = tmp_path / "moved"

    async def planted_run(s: Session) -> None:
        started = await s.ok("stratum_agent_run", {**run, "prompt": "later"})
        folder = home / started["runId"]
        with anyio.fail_after(120):  # a bound on a broken run, not a speed claim
            while (await s.ok("stratum_agent_poll", {"runId": started["runId"]}))["status"] != "complete":
                await anyio.sleep(0.05)
        folder.rename(moved)  # the run's folder, now outside, and a link to it in its place
        (moved / "stream.log").write_text(SECRET)
        folder.symlink_to(moved, target_is_directory=True)
        for tool in ("stratum_agent_poll", "stratum_cancel_agent_run"):
            assert (await s.ok(tool, {"runId": started["runId"]}))["status"] == "not_found"

    run_server(workspace, planted_run)
    assert (moved / "stream.log").read_text() == SECRET and not (moved / "cancel.json").exists()
