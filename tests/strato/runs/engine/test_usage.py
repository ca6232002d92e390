"""A step the engine runs itself is claimed for it before its agent starts: another
client (the real `strato mcp`, the CLI, 100 threads in 4 processes) can neither debit
that dispatch first with a smaller usage nor report a result for it, so the engine's
own measure is what the run spends. A report that landed before the claim keeps its
spend, and the engine runs the step as a new dispatch of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from strato.runs.service import Runs
from tests.support.approvals import approve_agents
from tests.support.flows import STRATO, Workspace, make_workspace
from tests.support.mcp import Session, run_server
from tests.support.runs import PROCESSES, THREADS, replay_usage, wait_for

ONE = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: R}
    steps:
      - id: a
        do: "step a"
        out: R
"""

# says it started, waits for `go`, then answers having cost 0.5
AGENT = """
import json, sys, time
from pathlib import Path
here = Path(sys.argv[1])
(here / "started").write_text("yes")
while not (here / "go").exists():
    time.sleep(0.02)
print(json.dumps({"type": "result", "result": json.dumps({"n": 3}), "total_cost_usd": 0.5, "usage": {}}))
"""


def _workspace(tmp_path: Path) -> tuple[Workspace, Path]:
    ws = make_workspace(tmp_path)
    here = tmp_path / "agent"
    here.mkdir()
    (here / "agent.py").write_text(AGENT)
    argv = json.dumps([sys.executable, str(here / "agent.py"), str(here), "{prompt}"])
    (ws.root / ".vivary").mkdir()
    (ws.root / ".vivary" / "agents.toml").write_text(f"[agents.claude]\nargv = {argv}\ntimeout_s = 120\n")
    approve_agents(ws.root)
    (tmp_path / "one.yaml").write_text(ONE)
    return ws, here


def _engine(ws: Workspace, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(STRATO), "run", *args, "--root", str(ws.root), "--json"], stdout=subprocess.PIPE, text=True
    )


def _debits(runs: Runs) -> list[dict[str, Any]]:
    return [ev["detail"] for ev in runs.audit("r1")["events"] if ev["type"] == "usage_debit"]


def test_while_the_engine_runs_a_step_no_other_client_can_report_its_usage_or_result(tmp_path: Path) -> None:
    ws, here = _workspace(tmp_path)
    engine = _engine(ws, str(tmp_path / "one.yaml"), "--id", "r1")
    try:
        wait_for(lambda: (here / "started").exists(), "the engine's agent starts")

        async def third_client(s: Session) -> None:
            (entry,) = (await s.ok("stratum_resume", {"runId": "r1"}))["ready"]
            report = {"runId": "r1", "dispatchId": entry["dispatchId"], "usage": {"usd": 0.01}}
            message, doc = await s.error("stratum_usage_report", report)
            assert doc is not None and doc["code"] == "engine_dispatch", message
            result = {"output": {"n": 1}, "usage": {"usd": 0.01}}
            message, doc = await s.error("stratum_step_done", {"runId": "r1", "stepId": "a", "result": result})
            assert doc is not None and doc["error_type"] == "engine_dispatch", message

        run_server(ws.root, third_client)
        code, doc = ws.strato_json("flow", "usage", "r1", _ready_id(ws), "--usage", '{"usd": 0.01}')
        assert code == 1 and doc["error"]["code"] == "engine_dispatch"
        (here / "go").touch()
        out, _ = engine.communicate(timeout=300)  # a hang is a loud failure
    finally:
        (here / "go").touch()  # a failed test leaves no agent waiting
        engine.kill()
    assert engine.returncode == 0 and json.loads(out)["status"] == "completed", out
    runs = ws.runs()
    assert runs.load("r1").state["flowSpent"]["usd"] == 0.5
    assert [d["source"] for d in _debits(runs)] == ["engine"]


def _ready_id(ws: Workspace) -> str:
    runs = ws.runs()
    (entry,) = runs.engine(runs.load("r1"), judge=False).ready()
    return str(entry["dispatchId"])


def test_a_report_that_lands_before_the_engine_takes_the_step_keeps_its_spend(tmp_path: Path) -> None:
    ws, here = _workspace(tmp_path)
    (here / "go").touch()
    runs = ws.runs()
    runs.plan(ONE, {}, "r1")
    first = _ready_id(ws)
    runs.usage_report("r1", first, {"usd": 0.01})  # a consumer's report, before any engine
    engine = _engine(ws, "--resume", "r1")
    out, _ = engine.communicate(timeout=300)
    assert engine.returncode == 0, out
    debits = _debits(runs)
    assert [(d["dispatchId"] == first, d["source"]) for d in debits] == [(True, "usage_report"), (False, "engine")]
    assert runs.load("r1").state["flowSpent"]["usd"] == 0.51


def test_reports_racing_the_engines_claim_never_replace_its_measure(tmp_path: Path) -> None:
    ws, here = _workspace(tmp_path)
    (here / "go").touch()
    runs = ws.runs()
    runs.plan(ONE, {}, "r1")
    first = _ready_id(ws)
    engine = _engine(ws, "--resume", "r1")  # claims while 100 threads in 4 processes report
    seen = replay_usage(ws.root, tmp_path / "go", {"kind": "usage", "dispatchId": first, "usage": {"usd": 0.01}})
    out, _ = engine.communicate(timeout=300)
    assert engine.returncode == 0, out
    assert sum(seen.values()) == PROCESSES * THREADS
    assert set(seen) <= {"debited", "duplicate", "refused:engine_dispatch"} and seen["debited"] <= 1, seen
    debits = _debits(runs)
    mine = [d for d in debits if d["source"] == "engine"]
    assert len(mine) == 1 and mine[0]["amount"]["usd"] == 0.5
    outside = 0.01 * seen["debited"]
    assert len(debits) == 1 + seen["debited"] and runs.load("r1").state["flowSpent"]["usd"] == 0.5 + outside
    if seen["debited"]:
        assert mine[0]["dispatchId"] != first


TWO = ONE + """      - id: b
        do: "step b"
        out: R
"""


def test_steps_ready_together_are_all_the_engines_before_its_first_agent_runs(tmp_path: Path) -> None:
    """Claimed in one transition: while step a's agent runs, b (ready beside it) cannot be
    reported by another client first, with less usage or an output of its choosing."""
    ws, here = _workspace(tmp_path)
    (tmp_path / "two.yaml").write_text(TWO)
    engine = _engine(ws, str(tmp_path / "two.yaml"), "--id", "r1")
    try:
        wait_for(lambda: (here / "started").exists(), "the engine's first agent starts")

        async def third_client(s: Session) -> None:
            ready = (await s.ok("stratum_resume", {"runId": "r1"}))["ready"]
            assert sorted(entry["id"] for entry in ready) == ["a", "b"], ready
            result = {"output": {"n": 99}, "usage": {"usd": 0.0}}
            for step in ("a", "b"):
                message, doc = await s.error("stratum_step_done", {"runId": "r1", "stepId": step, "result": result})
                assert doc is not None and doc["error_type"] == "engine_dispatch", message

        run_server(ws.root, third_client)
        (here / "go").touch()
        out, _ = engine.communicate(timeout=300)  # a hang is a loud failure
    finally:
        (here / "go").touch()  # a failed test leaves no agent waiting
        engine.kill()
    assert engine.returncode == 0 and json.loads(out)["status"] == "completed", out
    runs = ws.runs()
    state = runs.load("r1").state
    assert state["flowSpent"]["usd"] == 1.0
    assert [d["source"] for d in _debits(runs)] == ["engine", "engine"]
