"""Issue 25 over the real `strato mcp` server and the SDK's client: a request never
chooses a program. A spec with a shell command runs only on a server started with
`--allow-commands`; an agent runs only from an agents file the user approved as it is."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from strato.agents import trust
from strato.runs.service import Runs
from tests.support.approvals import approve_agents
from tests.support.mcp import Session, run_server
from tests.support.repos import commit_all, write_files

PROBE = """
version: 1
contracts:
  Out: {ok: boolean}
flows:
  entry: probe
  probe:
    input: {}
    output: {from: "${touch.output}", contract: Out}
    steps:
      - id: touch
        evaluate:
          command: COMMAND
        out: Out
"""


def _probe(marker: Path) -> str:
    return PROBE.replace("COMMAND", json.dumps(f"touch {marker}; echo '{{\"ok\": true}}'"))


def test_a_spec_command_from_a_client_runs_only_when_the_server_allows_commands(repo_dir: Path) -> None:
    marker = repo_dir.parent / "marker"
    spec = _probe(marker)
    write_files(repo_dir, {"README.md": "# ws\n"})
    commit_all(repo_dir, "workspace")

    async def refused(s: Session) -> None:
        for tool in ("stratum_plan", "stratum_flow_run_bg"):
            text, doc = await s.error(tool, {"spec": spec, "input": {}})
            assert doc is not None and doc["status"] == "error" and doc["error_type"] == "untrusted"
            assert "strato mcp --allow-commands" in doc["message"] and "touch" in doc["message"]
            assert "strato mcp --allow-commands" in text

    run_server(repo_dir, refused)
    assert not marker.exists() and Runs(repo_dir).store.run_ids() == []  # nothing ran, nothing written

    async def allowed(s: Session) -> None:
        doc = await s.ok("stratum_plan", {"spec": spec, "input": {}})
        assert doc["status"] == "completed" and doc["output"] == {"ok": True}

    run_server(repo_dir, allowed, "--allow-commands")
    assert marker.exists()


def _agent_workspace(repo_dir: Path) -> tuple[Path, Path]:
    """A workspace whose `.vivary/agents.toml` (not committed) names an agent that
    leaves a marker and answers."""
    marker = repo_dir.parent / "agent-ran"
    script = f"open({str(marker)!r}, 'w').close(); print('{{\"text\": \"done\"}}')"
    argv = json.dumps([sys.executable, "-c", script, "{prompt}"])
    write_files(repo_dir, {"README.md": "# ws\n"})
    commit_all(repo_dir, "workspace")
    write_files(repo_dir, {".vivary/agents.toml": f"[agents.helper]\nargv = {argv}\n"})
    return repo_dir, marker


def test_an_uncommitted_agents_file_runs_no_agent_until_it_is_approved(repo_dir: Path) -> None:
    root, marker = _agent_workspace(repo_dir)
    request = {"agent": "helper", "prompt": "hi", "cwd": "."}

    async def refused(s: Session) -> None:
        text, doc = await s.error("stratum_agent_run", request)
        assert doc is not None and doc["error_type"] == "untrusted"
        assert text.startswith(".vivary/agents.toml is not approved for this repository; it would run ")
        assert "vivary trust .vivary/agents.toml" in text

    run_server(root, refused)
    assert not marker.exists()
    approve_agents(root)

    async def approved(s: Session) -> None:
        doc = await s.ok("stratum_agent_run", request)
        assert doc["status"] == "complete"

    run_server(root, approved)
    assert marker.exists()


def test_an_approved_agents_file_that_changes_is_refused_again(repo_dir: Path) -> None:
    root, marker = _agent_workspace(repo_dir)
    approve_agents(root)
    toml = root / ".vivary" / "agents.toml"
    toml.write_text(toml.read_text() + "timeout_s = 5\n")  # one more byte than was approved

    async def refused(s: Session) -> None:
        text, _ = await s.error("stratum_agent_run", {"agent": "helper", "prompt": "hi", "cwd": "."})
        assert text.startswith(".vivary/agents.toml is changed since you approved it; it would run ")

    run_server(root, refused)
    assert not marker.exists() and trust.approved(root, "file", ".vivary/agents.toml") is not None
