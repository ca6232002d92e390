"""`stratum_agent_run`'s seed arguments and `stratum_flow_cancel`, through the real
`strato mcp` and the SDK's stdio client: each setting becomes the words the agent's
trusted entry gives it (a setting it has none for is refused before anything runs),
`agent: devin` is a configured CLI agent like any other, and a foreground run that
declared a flow is stopped, its whole process group, when that flow is cancelled."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import TextContent

from strato.agents import groups
from strato.mcp import contract
from tests.support.approvals import approve_agents
from tests.support.mcp import Session, run_server

ECHO = """
import json, sys
print(json.dumps({"type": "result", "result": json.dumps(sys.argv[1:])}), flush=True)
"""
SLEEPER = """
import os, time
with open("pids.txt", "a") as fh:
    fh.write(f"{os.getpid()}\\n")
while True:
    time.sleep(0.2)
"""
PY = json.dumps(sys.executable)
AGENTS = f"""
[agents.echo]
argv = [{PY}, "agents/echo.py", "--", "{{prompt}}"]
[agents.echo.settings]
effort = {{ argv = ["--effort", "{{value}}"], values = ["low", "high"] }}
allowedTools = {{ argv = ["--allowed", "{{value}}"] }}
thinking = {{ argv = ["--thinking={{value}}"] }}

[agents.sleeper]
argv = [{PY}, "agents/sleeper.py", "{{prompt}}"]
"""
DEVIN = f'\n[agents.devin]\nargv = [{PY}, "agents/echo.py", "devin", "{{prompt}}"]\n'
ONE_STEP = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    steps:
      - {id: a, do: "a", out: R}
"""


def _workspace(root: Path, agents: str) -> Path:
    (root / "agents").mkdir(exist_ok=True)
    (root / "agents" / "echo.py").write_text(ECHO)
    (root / "agents" / "sleeper.py").write_text(SLEEPER)
    (root / ".vivary").mkdir(exist_ok=True)
    (root / ".vivary" / "agents.toml").write_text(agents)
    approve_agents(root)
    return root


@pytest.fixture
def workspace(repo_dir: Path) -> Iterator[Path]:
    yield _workspace(repo_dir, AGENTS + DEVIN)
    pids = repo_dir / "pids.txt"  # a failed test must not leave an agent running
    for pid in pids.read_text().split() if pids.exists() else []:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def _runs(root: Path) -> int:
    folder = root / ".git" / "vivary" / "agent-runs"
    return len(list(folder.iterdir())) if folder.is_dir() else 0


async def refused(s: Session, tool: str, args: dict[str, Any], says: str) -> dict[str, Any]:
    message, doc = await s.error(tool, args)
    assert says in message, message
    assert doc is not None and contract.error_violations(tool, doc) == [], doc
    assert doc["status"] == "error"
    return doc


def test_settings_become_the_agents_own_words_or_are_refused_before_running(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        run = {"agent": "echo", "prompt": "hi", "cwd": "."}
        given = {"effort": "high", "allowedTools": ["Read", "Grep"], "thinking": True}
        done = await s.ok("stratum_agent_run", {**run, **given})
        assert contract.answer_violations("stratum_agent_run", done) == []
        argv = ["--effort", "high", "--allowed", "Read,Grep", "--thinking=true", "--", "hi"]
        assert json.loads(done["text"]) == argv
        assert json.loads((await s.ok("stratum_agent_run", {**run, "effort": "low"}))["text"])[:2] == ["--effort", "low"]

        before = _runs(workspace)
        await refused(s, "stratum_agent_run", {**run, "disallowedTools": ["Bash"]}, "does not take disallowedTools")
        await refused(s, "stratum_agent_run", {**run, "effort": "max"}, "takes effort high, low, not 'max'")
        await refused(s, "stratum_agent_run", {**run, "effort": "--rm"}, "not '--rm'")
        await refused(s, "stratum_agent_run", {**run, "peerLabel": "x"}, "peerLabel names a background run")
        flow = {"runId": (await s.ok("stratum_plan", {"spec": ONE_STEP, "input": {}}))["runId"]}
        await refused(s, "stratum_agent_run", {**run, "flow": flow}, "flow needs a cancellationId")
        await refused(s, "stratum_agent_run", {**run, "cancellationId": "../x"}, "fresh lowercase UUID")
        assert _runs(workspace) == before  # nothing was recorded, nothing ran

        mine = str(uuid.uuid4())
        await s.ok("stratum_agent_run", {**run, "cancellationId": mine})
        assert (await s.ok("stratum_agent_poll", {"runId": mine}))["status"] == "complete"
        await refused(s, "stratum_agent_run", {**run, "cancellationId": mine}, "already names a run")

        bg = await s.ok("stratum_agent_run", {**run, "background": True, "peerLabel": "Schema  Review!"})
        request = json.loads((workspace / ".git/vivary/agent-runs" / bg["runId"] / "request.json").read_text())
        assert request["peerLabel"] == "schema-review"

        devin = await s.ok("stratum_agent_run", {**run, "agent": "devin"})
        assert json.loads(devin["text"]) == ["devin", "hi"]

    run_server(workspace, scenario)


def test_devin_is_refused_clearly_where_none_is_configured(repo_dir: Path) -> None:
    root = _workspace(repo_dir, AGENTS)

    async def scenario(s: Session) -> None:
        await refused(s, "stratum_agent_run", {"agent": "devin", "prompt": "hi", "cwd": "."},
                      "no agent 'devin' in .vivary/agents.toml: configure it as [agents.devin]")

    run_server(root, scenario)


def test_flow_cancel_settles_the_run_and_stops_the_agents_it_claimed(workspace: Path) -> None:
    async def scenario(s: Session) -> None:
        plan = await s.ok("stratum_plan", {"spec": ONE_STEP, "input": {}})
        run_id = plan["runId"]
        claim = str(uuid.uuid4())
        args = {"agent": "sleeper", "prompt": "work", "cwd": ".", "cancellationId": claim,
                "flow": {"runId": run_id, "stepId": "a"}}
        answers: list[tuple[str, dict[str, Any] | None]] = []

        async def agent() -> None:
            answers.append(await s.error("stratum_agent_run", args))

        async with anyio.create_task_group() as tg:
            tg.start_soon(agent)
            with anyio.fail_after(120):  # a bound on a broken run, not a speed claim
                while not (workspace / "pids.txt").exists():
                    await anyio.sleep(0.05)
            pid = int((workspace / "pids.txt").read_text().split()[0])
            pgid = os.getpgid(pid)
            cancelled = await s.ok("stratum_flow_cancel", {"runId": run_id, "reason": "stop"})
        assert contract.answer_violations("stratum_flow_cancel", cancelled) == []
        assert cancelled["status"] == "cancelled" and cancelled["flowSettled"] and cancelled["acknowledged"]
        assert cancelled["agents"] == {"claimed": 1, "reaped": 1, "gone": 0, "unresolved": 0}
        assert groups.members(pgid) == [] and not groups.alive(pid)
        [(text, doc)] = answers
        assert doc is not None and doc["runId"] == claim and doc["reason"] == "cancelled by mcp", text

        again = await s.ok("stratum_flow_cancel", {"runId": run_id})
        assert (again["reason"], again["flowSettled"], again["agents"]["gone"]) == ("already_cancelled", True, 1)
        assert contract.answer_violations("stratum_flow_cancel", again) == []

        other = (await s.ok("stratum_plan", {"spec": ONE_STEP, "input": {}}))["runId"]
        await s.ok("stratum_step_done", {"runId": other, "stepId": "a", "result": {"output": {"n": 1}}})
        ended = await s.ok("stratum_flow_cancel", {"runId": other})
        assert (ended["status"], ended["flowSettled"], ended["reason"]) == ("completed", False, "already_completed")
        doc = await refused(s, "stratum_flow_cancel", {"runId": "ghost"}, "no run 'ghost'")
        assert doc["error_type"] == "run_not_found"
        await refused(s, "stratum_agent_run", {**args, "cancellationId": str(uuid.uuid4()),
                                               "flow": {"runId": "ghost"}}, "no run 'ghost'")

    run_server(workspace, scenario)


ENGINE_STEP = ONE_STEP.replace('do: "a", out: R', 'do: "a", agent: sleeper, out: R')


def test_flow_cancel_stops_the_agent_a_foreground_strato_run_is_running(workspace: Path) -> None:
    """`strato run` in another process runs the step's agent; the cancel over MCP finds its
    group in the run's registry, stops it, and the foreground run ends cancelled."""
    (workspace / "engine.yaml").write_text(ENGINE_STEP)
    strato = Path(sys.executable).parent / "strato"
    fg = subprocess.Popen([strato, "run", workspace / "engine.yaml", "--id", "fg-1", "--root", workspace, "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    registry = workspace / ".git" / "vivary" / "run-agents" / "fg-1"
    try:
        async def scenario(s: Session) -> None:
            with anyio.fail_after(120):  # a bound on a broken run, not a speed claim
                while not (workspace / "pids.txt").exists() or not list(registry.glob("*.json")):
                    await anyio.sleep(0.05)
            pid = int((workspace / "pids.txt").read_text().split()[0])
            assert os.getpgid(pid) == pid  # the agent leads its own group
            cancelled = await s.ok("stratum_flow_cancel", {"runId": "fg-1", "reason": "stop"})
            assert contract.answer_violations("stratum_flow_cancel", cancelled) == []
            assert (cancelled["status"], cancelled["flowSettled"], cancelled["acknowledged"]) == ("cancelled", True, True)
            assert cancelled["agents"] == {"claimed": 1, "reaped": 1, "gone": 0, "unresolved": 0}
            assert groups.members(pid) == [] and not groups.alive(pid)
            assert (await s.ok("strato_run_show", {"runId": "fg-1"}))["status"] == "cancelled"

        run_server(workspace, scenario)
        out, err = fg.communicate(timeout=120)  # a bound on a broken run, not a speed claim
        assert json.loads(out)["status"] == "cancelled", err
        assert list(registry.glob("*.json")) == []  # the run removed its record as the agent ended
    finally:
        if fg.poll() is None:
            fg.kill()
            fg.wait()


# a template (its agent is configured only in the test's workspace, so the sweep of
# embedded specs, which validates against the built-in agents, leaves it out)
ENGINE_FANOUT = """
version: 1
contracts:
  Edit: {file: string}
  Sum: {count: integer}
flows:
  entry: main
  main:
    input: {files: "string[]"}
    output: {from: "${count.output}", contract: Sum}
    steps:
      - id: edit
        fanout:
          over: "${input.files}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - {do: "Edit ${item}", agent: SLEEPER_AGENT, out: Edit}
      - id: count
        after: [edit]
        set: {count: "len(result.edit)"}
        out: Sum
"""


def test_flow_cancel_stops_an_engine_fanouts_agent_the_server_itself_is_running(workspace: Path) -> None:
    """A consumer's `stratum_resume` runs a due engine fanout in the server; the cancel,
    another call on the same server, stops the item's agent from the run's registry."""
    async def scenario(s: Session) -> None:
        run_id = (await s.ok("stratum_plan", {"spec": ENGINE_FANOUT.replace("SLEEPER_AGENT", "sleeper"), "input": {"files": ["a.txt"]}}))["runId"]
        resumed: list[tuple[str, dict[str, Any] | None]] = []

        async def resume() -> None:
            result = await s.call("stratum_resume", {"runId": run_id})
            first = result.content[0]
            assert isinstance(first, TextContent)
            resumed.append((first.text, result.structured_content))

        async with anyio.create_task_group() as tg:
            tg.start_soon(resume)
            with anyio.fail_after(120):  # a bound on a broken run, not a speed claim
                while not (workspace / "pids.txt").exists():
                    await anyio.sleep(0.05)
            pid = int((workspace / "pids.txt").read_text().split()[0])
            cancelled = await s.ok("stratum_flow_cancel", {"runId": run_id})
        assert contract.answer_violations("stratum_flow_cancel", cancelled) == []
        assert cancelled["flowSettled"] and cancelled["acknowledged"]
        assert cancelled["agents"] == {"claimed": 1, "reaped": 1, "gone": 0, "unresolved": 0}
        assert groups.members(pid) == [] and not groups.alive(pid)
        [(text, _)] = resumed  # the server's own call came back once its agent was stopped
        assert (await s.ok("strato_run_show", {"runId": run_id}))["status"] == "cancelled", text

    run_server(workspace, scenario)
