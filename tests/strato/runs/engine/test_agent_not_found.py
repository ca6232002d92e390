"""An agent whose program is not there (ENOENT) fails its step at once with reason
`agent_not_found`: no retry could change that (7f21ccb retried it as if it could). An
agent that ran and failed is still retried."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support import console
from tests.support.approvals import approve_agents
from tests.support.flows import Workspace, make_workspace


def _agents(ws: Workspace, argv: list[str]) -> None:
    (ws.root / ".vivary").mkdir(exist_ok=True)
    (ws.root / ".vivary" / "agents.toml").write_text(f"[agents.claude]\nargv = {json.dumps(argv)}\n")
    approve_agents(ws.root)


def test_a_missing_agent_program_fails_the_step_without_a_retry(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    missing = str(tmp_path / "no-such-agent")
    _agents(ws, [missing, "{prompt}"])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_minimal.stratum.yaml"), {"text": "hi"}).snap.run_id  # attempts: 2
    snap = runs.drive(run_id)
    assert snap.state["status"] == "failed"
    step = snap.state["scope"]["steps"]["classify_text"]
    [attempt] = step["attempts"]
    assert attempt["reason"].startswith("agent_not_found: agent claude: no program ")
    assert missing in attempt["reason"] and attempt["resolution"] == "gave up"
    assert snap.state["failure"]["reason"].startswith("agent_not_found")


def test_an_agent_that_ran_and_failed_is_still_retried(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _agents(ws, [sys.executable, "-c", "import sys; sys.exit(3)", "{prompt}"])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_minimal.stratum.yaml"), {"text": "hi"}).snap.run_id
    snap = runs.drive(run_id)
    attempts = snap.state["scope"]["steps"]["classify_text"]["attempts"]
    assert snap.state["status"] == "failed" and len(attempts) == 2
    assert attempts[0]["resolution"] == "retried" and "exited 3" in attempts[0]["reason"]


def test_an_agent_run_of_a_missing_program_says_agent_not_found(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _agents(ws, [str(tmp_path / "no-such-agent"), "{prompt}"])
    proc = console.run("strato", "agent", "run", "claude", "--prompt", "hi", "--root", ws.root, "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["status"] == "error"
    assert doc["reason"].startswith("agent_not_found: agent claude: no program ")


FANOUT = """
version: 1
contracts:
  R: {value: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${last.output}", contract: R}
    steps:
      - id: inspect
        fanout:
          over: "${input.items}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Inspect ${item}"
              agent: claude
              out: R
              attempts: 3
      - id: last
        after: [inspect]
        set: {value: "'done'"}
        out: R
"""


def test_a_fanout_item_of_a_missing_agent_program_is_not_retried(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _agents(ws, [str(tmp_path / "no-such-agent"), "{prompt}"])
    runs = ws.runs()
    snap = runs.drive(runs.plan(FANOUT, {"items": ["a"]}).snap.run_id)
    assert snap.state["status"] == "failed"
    tried = [e for e in runs.audit(snap.run_id)["events"] if e["type"] == "fanout_attempt_result"]
    assert len(tried) == 1, tried
    done = [e for e in runs.audit(snap.run_id)["events"] if e["type"] == "fanout_item_done"]
    assert "agent_not_found" in json.dumps(done), done
