"""Who decides a gate over MCP. The client controls every byte it sends (arguments, its
name in the handshake); the server controls the transport fact "this came over MCP" and
reads the policy from the committed `.vivary/agents.toml`. So: a decision over MCP is the
agent's, never a person's; a gate token is handed out only where the policy lets MCP
decide; a gate reserved for a person is refused over MCP and off a terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support import console
from tests.support.approvals import approve_agents
from tests.support.mcp import GATE_SPEC, Session
from tests.support.repos import commit_all, write_files

STRATO = Path(sys.executable).parent / "strato"
GOOD = {"output": {"text": "final", "score": 0.9}}


def _serve(root: Path, scenario: Any, client: str = "hostile-host") -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "strato.cli", "mcp", "--root", str(root)], env=dict(os.environ)
    )

    async def main() -> None:
        info = types.Implementation(name=client, version="6.6")
        async with stdio_client(params) as (read, write), ClientSession(read, write, client_info=info) as session:
            await session.initialize()
            await scenario(Session(session))

    anyio.run(main)


def _workspace(repo_dir: Path, gates: str | None, approved: bool = True) -> Path:
    """A committed workspace; its `[gates]` approved by the user as `vivary trust` does
    (a committed `mcp = "resolve"` widens only what the user approved)."""
    files = {"specs/review.yaml": GATE_SPEC}
    if gates is not None:
        files[".vivary/agents.toml"] = gates
    write_files(repo_dir, files)
    commit_all(repo_dir, "workspace")
    if gates is not None and approved:
        approve_agents(repo_dir)
    return repo_dir


async def _to_gate(s: Session) -> dict[str, Any]:
    """Plan a run and do its work step: the run waits at its gate (one `ready` entry)."""
    plan = await s.ok("stratum_plan", {"spec": GATE_SPEC, "input": {"topic": "t"}})
    return await s.ok("stratum_step_done", {"runId": plan["runId"], "stepId": "work", "result": GOOD})


def _cli(root: Path, *args: str, tty: int | None = None) -> subprocess.CompletedProcess[str]:
    """`strato ARGS --root ROOT` off a terminal, in process; at the terminal `tty` (a pty's
    secondary end), a real process whose stdin it is."""
    if tty is None:
        return console.run("strato", *args, "--root", root)
    return subprocess.run(
        [str(STRATO), *args, "--root", str(root)], capture_output=True, text=True, stdin=tty, check=False
    )


def _only_run(root: Path) -> str:
    """The one run of the workspace (MCP clients do not name runs)."""
    [run] = json.loads(_cli(root, "flow", "list", "--json").stdout)["runs"]
    return str(run["runId"])


def _gate_events(root: Path) -> list[dict[str, Any]]:
    audit = json.loads(_cli(root, "flow", "audit", _only_run(root), "--json").stdout)
    return [e for e in audit["events"] if e["type"] == "gate_resolved"]


def test_by_default_mcp_sees_waiting_gates_without_their_tokens(repo_dir: Path) -> None:
    root = _workspace(repo_dir, None)
    cli_token = {}

    async def scenario(s: Session) -> None:
        at_gate = await _to_gate(s)
        run = {"runId": at_gate["runId"]}
        for doc in (at_gate, await s.ok("strato_gates", {}), await s.ok("stratum_resume", run),
                    await s.ok("stratum_audit", run), await s.ok("stratum_flow_poll", run),
                    await s.ok("strato_run_show", run)):
            assert "gateToken" not in json.dumps(doc)
        [gate] = (await s.ok("strato_gates", {}))["gates"]
        assert gate["stepId"] == "review" and gate["decidedAt"] == "cli"
        # even holding the real token (read by a person at the CLI), MCP may not decide
        cli_token["t"] = json.loads(_cli(root, "flow", "gates", "--json").stdout)["gates"][0]["gateToken"]
        [entry] = at_gate["ready"]
        assert entry["kind"] == "gate" and entry["decidedAt"] == "cli"
        for name, extra in (("stratum_gate_resolve", {}), ("strato_gate_resolve", {"gateToken": cli_token["t"]})):
            message, doc = await s.error(
                name, {"runId": at_gate["runId"], "stepId": "review", "decision": "approve", **extra}
            )
            assert doc is not None and doc["error_type"] == "gate_not_allowed_over_mcp"
            assert "strato flow gate" in message

    _serve(root, scenario)
    assert _gate_events(root) == []


def test_a_decision_over_mcp_is_recorded_as_the_agent_with_the_clients_name(repo_dir: Path) -> None:
    root = _workspace(repo_dir, '[gates]\nmcp = "resolve"\n')

    async def scenario(s: Session) -> None:
        at_gate = await _to_gate(s)
        token = at_gate["ready"][0]["gateToken"]
        assert (await s.ok("strato_gates", {}))["gates"][0]["gateToken"] == token
        done = await s.ok("stratum_gate_resolve", {"runId": at_gate["runId"], "stepId": "review", "decision": "approve"})
        assert done["status"] == "completed"

    _serve(root, scenario, client="Claude Code")
    [event] = _gate_events(root)
    assert event["detail"]["resolvedBy"] == "agent" and event["detail"]["client"] == "Claude Code 6.6"
    show = json.loads(_cli(root, "flow", "audit", _only_run(root), "--json").stdout)
    [attempt] = show["steps"]["review"]["attempts"]
    assert attempt["resolvedBy"] == "agent" and attempt["client"] == "Claude Code 6.6"


def test_a_gate_reserved_for_a_person_is_refused_over_mcp_and_off_a_terminal(repo_dir: Path) -> None:
    root = _workspace(repo_dir, '[gates]\nmcp = "resolve"\nperson = ["reviewed.review"]\n')

    async def scenario(s: Session) -> None:
        at_gate = await _to_gate(s)
        [gate] = at_gate["ready"]
        assert "gateToken" not in gate and gate["decidedAt"] == "person"

    _serve(root, scenario)
    token = json.loads(_cli(root, "flow", "gates", "--json").stdout)["gates"][0]["gateToken"]

    async def forged(s: Session) -> None:
        run = _only_run(root)
        for name, extra in (("stratum_gate_resolve", {}), ("strato_gate_resolve", {"gateToken": token})):
            message, doc = await s.error(name, {"runId": run, "stepId": "review", "decision": "approve", **extra})
            assert doc is not None and doc["error_type"] == "gate_needs_person" and "terminal" in message

    _serve(root, forged, client="human")  # a client calling itself "human" changes nothing
    # a script without a terminal, or a person claiming to be an agent, is refused too
    piped = _cli(root, "flow", "gate", "approve", _only_run(root), "review")
    assert piped.returncode == 1 and piped.stderr.startswith("error: gate review (reviewed) must be decided by a person")
    assert _gate_events(root) == []
    # a person at a (pseudo-)terminal decides it
    primary, secondary = pty.openpty()
    try:
        as_agent = _cli(root, "flow", "gate", "approve", _only_run(root), "review", "--resolved-by", "agent", tty=secondary)
        assert as_agent.returncode == 1 and "person" in as_agent.stderr
        at_tty = _cli(root, "flow", "gate", "approve", _only_run(root), "review", "--json", tty=secondary)
    finally:
        os.close(primary)
        os.close(secondary)
    assert at_tty.returncode == 0, at_tty.stderr
    assert json.loads(at_tty.stdout)["status"] == "completed"
    [event] = _gate_events(root)
    assert event["detail"]["resolvedBy"] == "human" and "client" not in event["detail"]


def test_a_cli_decision_without_a_terminal_is_the_agents_by_default(repo_dir: Path) -> None:
    root = _workspace(repo_dir, None)

    async def scenario(s: Session) -> None:
        await _to_gate(s)

    _serve(root, scenario)
    assert _cli(root, "flow", "gate", "approve", _only_run(root), "review").returncode == 0
    [event] = _gate_events(root)
    assert event["detail"]["resolvedBy"] == "agent"


def test_a_whole_flow_may_be_reserved_and_bad_policy_is_a_config_error(repo_dir: Path) -> None:
    root = _workspace(repo_dir, '[gates]\nmcp = "resolve"\nperson = ["reviewed"]\n')

    async def scenario(s: Session) -> None:
        at_gate = await _to_gate(s)
        assert at_gate["ready"][0]["decidedAt"] == "person"

    _serve(root, scenario)
    (root / ".vivary" / "agents.toml").write_text('[gates]\nmcp = "always"\n')
    proc = _cli(root, "flow", "gates")
    assert proc.returncode == 2 and proc.stderr == 'error: [gates] mcp must be "view" or "resolve"\n'


def test_a_branchs_own_resolve_grants_mcp_nothing_until_the_user_approves_it(repo_dir: Path) -> None:
    """A checked-out pull request commits `[gates] mcp = "resolve"`: HEAD is the author's
    branch, so its bytes widen nothing the user did not approve; the user's own
    `agents.toml` may grant it."""
    root = _workspace(repo_dir, '[gates]\nmcp = "resolve"\n', approved=False)

    async def refused(s: Session) -> None:
        at_gate = await _to_gate(s)
        assert "gateToken" not in at_gate["ready"][0]
        message, _ = await s.error("stratum_gate_resolve",
                                   {"runId": at_gate["runId"], "stepId": "review", "decision": "approve"})
        assert "resolve" in message

    _serve(root, refused)
    assert _gate_events(root) == []
    own = Path(os.environ["XDG_CONFIG_HOME"]) / "vivary" / "agents.toml"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text('[gates]\nmcp = "resolve"\n')

    async def granted(s: Session) -> None:
        gates = (await s.ok("strato_gates", {}))["gates"]
        assert gates and gates[0]["gateToken"]

    _serve(root, granted)
