"""Background flow runs through the real `strato mcp` and the SDK's stdio client: every
answer is checked against Stratum's shapes (no undeclared key), a run outlives the
server that started it, and two servers poll and cancel one run."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from strato.agents import groups
from strato.mcp import contract
from strato.mcp.contract import answer_violations, event_violations
from tests.support.approvals import approve_agents
from tests.support.mcp import Session
from tests.support.repos import commit_all
from tests.support.runs import (
    GATED_SPEC,
    STEPS_SPEC,
    calls,
    is_runner,
    kill_hostiles,
    make_workspace,
    one_step_spec,
    pids,
    runner_pid,
)

# their agents ignore SIGTERM; the claim is that they are stopped, not the grace's length
pytestmark = pytest.mark.usefixtures("short_grace")

EXPECTED_CALLS = ["draft", "fix", "fix", "finish"]


@pytest.fixture
def workspace(repo_dir: Path) -> Any:
    root = make_workspace(repo_dir)
    toml = root / ".vivary" / "agents.toml"
    toml.write_text(toml.read_text() + '[gates]\nmcp = "resolve"\n')
    commit_all(root, "gates over mcp")
    approve_agents(root)
    yield root
    kill_hostiles(root)


@asynccontextmanager
async def server(root: Path) -> AsyncIterator[Session]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "strato.cli", "mcp", "--root", str(root)],
        env=dict(os.environ), cwd=str(root.parent),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Session(session)


async def checked(s: Session, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    doc = await s.ok(tool, arguments)
    assert answer_violations(tool, doc) == [], doc
    for event in doc.get("events", []):
        assert event_violations(event) == [], event
    return doc


async def until(condition: Callable[[], Awaitable[Any]], what: str, bound_s: float = 180) -> Any:
    """Poll a condition; the bound only keeps a broken run from hanging the suite."""
    deadline = time.monotonic() + bound_s
    while not (value := await condition()):
        assert time.monotonic() < deadline, f"never: {what}"
        await anyio.sleep(0.05)
    return value


async def poll_until(s: Session, run_id: str, bg_status: str) -> dict[str, Any]:
    async def seen() -> dict[str, Any] | None:
        doc = await checked(s, "stratum_flow_bg_poll", {"runId": run_id})
        return doc if doc["bg"]["status"] == bg_status else None

    return await until(seen, f"bg status {bg_status}")  # type: ignore[no-any-return]


def test_run_bg_answers_at_once_and_poll_pages_its_events_to_the_end(workspace: Path) -> None:
    async def main() -> None:
        async with server(workspace) as s:
            started = await checked(s, "stratum_flow_run_bg", {"spec": STEPS_SPEC, "input": {"tag": "m1"}})
            assert set(started) == {"status", "runId"}
            run_id = started["runId"]
            paged: list[dict[str, Any]] = []
            cursor = 0
            while True:  # a client that reads each event once, from where it left off
                doc = await checked(s, "stratum_flow_bg_poll", {"runId": run_id, "cursor": cursor})
                paged += doc["events"]
                cursor = doc["nextCursor"]
                if doc["status"] != "running":
                    break
                await anyio.sleep(0.05)
            assert doc["status"] == "completed" and doc["output"] == {"text": "finish done"}
            assert doc["ledger"]["spent"]["dispatches"] == 4
            whole = await checked(s, "stratum_flow_bg_poll", {"runId": run_id})
            assert paged == whole["events"] and cursor == whole["nextCursor"] == len(paged)
            assert await checked(s, "stratum_flow_cancel_bg", {"runId": run_id}) == {"status": "completed"}

            for bad in ({"runId": run_id, "cursor": -1}, {"runId": run_id, "cursor": cursor + 1},
                        {"runId": run_id, "cursor": "3"}, {"runId": run_id, "since": 0},
                        {"runId": "no-such-run"}):
                text, _ = await s.error("stratum_flow_bg_poll", bad)
                assert text
            text, _ = await s.error("stratum_flow_run_bg", {"spec": STEPS_SPEC, "input": {}, "runId": "x"})
            assert "runId" in text
            text, _ = await s.error("stratum_flow_run_bg", {"spec": STEPS_SPEC, "input": {"tag": "x"},
                                                            "workspaceRoot": "/"})
            assert "outside the workspace" in text
            text, _ = await s.error("stratum_flow_cancel_bg", {"runId": "no-such-run"})
        assert calls(workspace, "m1") == EXPECTED_CALLS

    anyio.run(main)


def test_a_background_run_survives_the_server_that_started_it(workspace: Path) -> None:
    os.environ["SLOW_S"] = "1"  # the first step is still running when the server goes

    async def main() -> None:
        async with server(workspace) as first:
            run_id = (await checked(first, "stratum_flow_run_bg",
                                    {"spec": STEPS_SPEC, "input": {"tag": "r"}}))["runId"]
            await until(_async(lambda: calls(workspace, "r") == ["draft"]), "the first agent starts")
        # the first server has exited; its run goes on
        async with server(workspace) as second:
            doc = await poll_until(second, run_id, "completed")
            assert doc["output"] == {"text": "finish done"}
        assert calls(workspace, "r") == EXPECTED_CALLS

    anyio.run(main)


def test_two_servers_poll_and_cancel_one_run(workspace: Path) -> None:
    async def main() -> None:
        async with server(workspace) as a, server(workspace) as b:
            run_id = (await checked(a, "stratum_flow_run_bg",
                                    {"spec": one_step_spec("hostile"), "input": {"tag": "two"}}))["runId"]
            procs = await until(_async(lambda: len(pids(workspace, "two")) == 4 and pids(workspace, "two")),
                                "four agent processes")
            for s in (a, b):
                doc = await poll_until(s, run_id, "running")
                assert doc["bg"]["cancelRequested"] is False
            answers: list[dict[str, Any]] = []

            async def cancel(s: Session) -> None:
                answers.append(await checked(s, "stratum_flow_cancel_bg", {"runId": run_id}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel, a)
                tg.start_soon(cancel, b)
            assert answers == [{"status": "cancelled"}, {"status": "cancelled"}]
            assert not any(groups.alive(p) for p in procs)
            for s in (a, b):
                doc = await checked(s, "stratum_flow_bg_poll", {"runId": run_id})
                assert doc["status"] == "failed" and doc["bg"]["status"] == "cancelled"
                assert doc["bg"]["cancelRequested"] is True
                assert [e["type"] for e in doc["events"]].count("flow_cancelled") == 1
        assert calls(workspace, "two") == ["work"]

    anyio.run(main)


def test_a_gate_resolved_over_mcp_starts_a_runner_again(workspace: Path) -> None:
    async def main() -> None:
        async with server(workspace) as s:
            run_id = (await checked(s, "stratum_flow_run_bg", {"spec": GATED_SPEC, "input": {"tag": "g"}}))["runId"]
            doc = await poll_until(s, run_id, "waiting_gate")
            assert doc["bg"]["pendingGates"] == ["review"] and doc["bg"]["gateStepId"] == "review"
            pid = runner_pid(workspace, run_id)
            assert pid is not None
            await until(_async(lambda: not is_runner(pid)), "the runner exits at the gate")
            await checked(s, "stratum_gate_resolve", {"runId": run_id, "stepId": "review", "decision": "revise"})
            await until(_async(lambda: calls(workspace, "g") == ["draft", "draft"]), "draft runs again")
            doc = await poll_until(s, run_id, "waiting_gate")
            assert doc["bg"]["pendingGates"] == ["review"]

    anyio.run(main)


# (tool, status) no request reaches, and why
UNREACHABLE = {
    ("stratum_flow_cancel_bg", "running"): "the runner sees a cancel within a tick and stops the agents "
    "within their grace; only a fanout still running after ~35 s (the runner sees a cancel after it) "
    "leaves the run running when the answer is due",
}


def test_every_answer_of_the_background_tools_that_a_request_can_reach(workspace: Path) -> None:
    budget = STEPS_SPEC.replace("    steps:", "    budget: {dispatches: 1}\n    steps:", 1)
    seen: set[tuple[str, str]] = set()

    async def main() -> None:
        async with server(workspace) as s:
            async def answer(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                doc = await checked(s, tool, arguments)
                seen.add((tool, doc["status"]))
                return doc

            for spec, tag, end in ((STEPS_SPEC, "v-ok", "completed"), (one_step_spec("silent"), "v-f", "failed"),
                                   (budget, "v-b", "budget_exhausted"), (one_step_spec("hostile"), "v-c", None)):
                run_id = (await answer("stratum_flow_run_bg", {"spec": spec, "input": {"tag": tag}}))["runId"]
                await answer("stratum_flow_bg_poll", {"runId": run_id})
                if end is None:
                    await until(_async(lambda: len(pids(workspace, "v-c")) == 4), "the agent runs")
                    assert (await answer("stratum_flow_cancel_bg", {"runId": run_id}))["status"] == "cancelled"
                    continue
                doc = await poll_until(s, run_id, end)
                seen.add(("stratum_flow_bg_poll", doc["status"]))
                assert doc["status"] == end
                assert await answer("stratum_flow_cancel_bg", {"runId": run_id}) == {"status": end}
            cancelled = await checked(s, "stratum_flow_bg_poll", {"runId": run_id})
            assert cancelled["status"] == "failed" and cancelled["bg"]["status"] == "cancelled"

    anyio.run(main)
    want = {(t, v) for t in ("stratum_flow_run_bg", "stratum_flow_bg_poll", "stratum_flow_cancel_bg")
            for v in contract.TOOLS[t].statuses} - set(UNREACHABLE)
    assert seen == want


def _async(check: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        return check()

    return run
