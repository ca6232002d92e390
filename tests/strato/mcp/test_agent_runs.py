"""The agent-run tools through the MCP SDK's stdio client against a real `strato mcp`;
every answer is checked against the reference's response shapes, no undeclared key."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from strato.agents import groups
from strato.mcp.contract import answer_violations
from tests.support.agents import agent_workspace
from tests.support.mcp import Session, run_server

# their agents ignore SIGTERM; the claim is that they are stopped, not the grace's length
pytestmark = pytest.mark.usefixtures("short_grace")


@pytest.fixture
def workspace(repo_dir: Path) -> Iterator[Path]:
    """The agent runs' workspace (scripted agents), not this folder's graph workspace."""
    yield from agent_workspace(repo_dir)


async def answer(s: Session, tool: str, args: dict[str, Any], status: str) -> dict[str, Any]:
    doc = await s.ok(tool, args)
    assert doc["status"] == status, doc
    assert answer_violations(tool, doc) == []
    return doc


async def wait(s: Session, run_id: str, status: str) -> dict[str, Any]:
    with anyio.fail_after(120):  # a bound on a broken run, not a speed claim
        while (await s.ok("stratum_agent_poll", {"runId": run_id}))["status"] != status:
            await anyio.sleep(0.05)
    return await answer(s, "stratum_agent_poll", {"runId": run_id}, status)


def test_every_variant_of_the_three_tools(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        run = {"agent": "steady", "prompt": "now", "cwd": "."}
        done = await answer(s, "stratum_agent_run", run, "complete")
        assert done["text"] == "done: now" and done["usage"] == {"usd": 0.25, "tokens": 15}

        bg = await answer(s, "stratum_agent_run", {**run, "prompt": "wait", "background": True}, "bg_started")
        await answer(s, "stratum_agent_poll", {"runId": bg["runId"]}, "running")
        (workspace / "go").touch()
        await wait(s, bg["runId"], "complete")
        await answer(s, "stratum_cancel_agent_run", {"runId": bg["runId"]}, "already_complete")

        text, crash = await s.error("stratum_agent_run", {**run, "agent": "crash"})
        assert crash is not None and text == f"agent run {crash['runId']} failed: exited 3"
        assert answer_violations("stratum_agent_poll", crash) == []
        assert crash["exitCode"] == 3 and "disk on fire" in crash["stderrTail"]
        await answer(s, "stratum_cancel_agent_run", {"runId": crash["runId"]}, "already_error")

        hostile = await answer(s, "stratum_agent_run", {**run, "agent": "hostile", "background": True}, "bg_started")
        with anyio.fail_after(120):
            while len((workspace / "pids.txt").read_text().split() if (workspace / "pids.txt").exists() else []) < 4:
                await anyio.sleep(0.05)
        pids = [int(p) for p in (workspace / "pids.txt").read_text().split()]
        pgid = os.getpgid(pids[0])
        await answer(s, "stratum_cancel_agent_run", {"runId": hostile["runId"]}, "cancelled")
        assert groups.members(pgid) == [] and not any(groups.alive(p) for p in pids)
        polled = await answer(s, "stratum_agent_poll", {"runId": hostile["runId"]}, "error")
        assert polled["reason"] == "cancelled by mcp"

        for tool in ("stratum_agent_poll", "stratum_cancel_agent_run"):
            await answer(s, tool, {"runId": "ar-ffffffffffff"}, "not_found")

    run_server(workspace, scenario)


def test_bad_requests_are_refused_in_one_line(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        for args, want in [
            ({"agent": "steady", "prompt": "x", "cwd": ".", "colour": "red"}, "colour"),
            ({"agent": "steady", "prompt": 7, "cwd": "."}, "prompt"),
            ({"agent": "steady", "prompt": "x"}, "cwd"),
            ({"agent": "steady", "prompt": "x", "cwd": ".", "background": "yes"}, "background"),
            ({"agent": "nobody", "prompt": "x", "cwd": "."}, "no agent 'nobody'"),
            ({"agent": "steady", "prompt": "x", "cwd": "../.."}, "not a folder inside the workspace"),
        ]:
            text, _ = await s.error("stratum_agent_run", args)
            assert want in text, text
        text, _ = await s.error("stratum_agent_poll", {"runId": 5})
        assert "runId" in text

    run_server(workspace, scenario)
    assert not (workspace / ".git" / "vivary" / "agent-runs").exists()


def test_the_handshake_names_the_server_and_its_version(workspace: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "strato.cli", "mcp", "--root", str(workspace)])

    async def main() -> types.InitializeResult:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await session.initialize()

    info = anyio.run(main).server_info
    assert (info.name, info.version) == ("strato", version("vivary-git"))
