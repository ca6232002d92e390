"""Issue 25 at the terminal: `strato run FILE` is the person's consent to FILE (as
`bash FILE` is), while the agents and judge of a `.vivary/agents.toml` nobody approved
are refused before the run exists: exit 1, one line, `untrusted` under --json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from strato.agents import trust
from strato.runs.service import Runs
from tests.support.approvals import approve_agents
from tests.support.flows import make_workspace

SPEC = """
version: 1
contracts:
  Out: {ok: boolean, holds: boolean}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${STEP.output}", contract: Out}
    steps:
STEPS
"""
EVALUATE = """      - id: probe
        evaluate:
          command: COMMAND
        out: Out
"""
AGENT = """      - id: work
        do: "Say ok"
        agent: helper
        out: Out
        ENSURE
"""


def _spec(tmp_path: Path, steps: str, step: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace("STEPS", steps).replace("STEP", step))
    return path


def _agents(root: Path, marker: Path) -> None:
    script = f"open({str(marker)!r}, 'a').write('x'); print('{{\"ok\": true, \"holds\": true}}')"
    argv = json.dumps([sys.executable, "-c", script, "{prompt}"])
    (root / ".vivary").mkdir()
    (root / ".vivary" / "agents.toml").write_text(f"[agents.helper]\nargv = {argv}\n[judge]\nargv = {argv}\n")


def test_strato_run_file_is_consent_to_its_commands(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    marker = tmp_path / "evaluated"
    command = json.dumps(f"touch {marker}; echo '{{\"ok\": true, \"holds\": true}}'")
    spec = _spec(tmp_path, EVALUATE.replace("COMMAND", command), "probe")
    code, doc = ws.strato_json("run", str(spec))
    assert code == 0 and doc["status"] == "completed", doc
    assert marker.exists()
    # approved as read, for this repository only: a run of it fetched elsewhere runs nothing
    assert trust.is_approved(ws.root, "spec", str(spec), spec.read_bytes())
    assert trust.approvals(tmp_path) == []


def test_an_agent_of_an_unapproved_file_is_refused_before_the_run_exists(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    marker = tmp_path / "agent-ran"
    _agents(ws.root, marker)
    spec = _spec(tmp_path, AGENT.replace("ENSURE", ""), "work")
    proc = ws.strato("run", str(spec), "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: .vivary/agents.toml is not approved for this repository; it would run ")
    assert "`vivary trust .vivary/agents.toml`" in line
    assert json.loads(proc.stdout)["error"]["code"] == "untrusted"
    assert Runs(ws.root).store.run_ids() == [] and not marker.exists()
    approve_agents(ws.root)
    code, doc = ws.strato_json("run", str(spec))
    assert code == 0 and doc["status"] == "completed" and marker.exists(), doc


def test_a_judge_of_an_unapproved_file_is_refused_while_the_agent_is_the_users(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    marker = tmp_path / "ran"
    _agents(ws.root, marker)
    # the user's own agents.toml defines `helper`: only the workspace's judge is left unapproved
    own = Path.home() / ".config" / "vivary"
    own.mkdir(parents=True)
    (own / "agents.toml").write_text((ws.root / ".vivary" / "agents.toml").read_text().split("[judge]")[0])
    ensure = 'ensure:\n          - judged: {statement: "it is ok", stakes: cheap}'
    spec = _spec(tmp_path, AGENT.replace("ENSURE", ensure), "work")
    proc = ws.strato("run", str(spec), "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "untrusted", proc.stderr
    assert Runs(ws.root).store.run_ids() == [] and not marker.exists()
    plain = _spec(tmp_path, AGENT.replace("ENSURE", ""), "work")  # no judged ensure: no judge needed
    code, doc = ws.strato_json("run", str(plain))
    assert code == 0 and doc["status"] == "completed" and marker.exists(), doc
