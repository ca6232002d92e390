"""Lanes of adaptive verification, for tests: a workspace with a judge that logs every
question, a one-step judged spec, and the decisions read back from a run's audit."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from strato.runs.service import Runs
from tests.support.approvals import approve_agents
from tests.support.flows import Workspace, make_workspace

JUDGED_SPEC = """
version: 1
contracts:
  A: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${w.output}", contract: A}
    steps:
      - id: w
        do: "write"
        out: A
        attempts: 1
        ensure:
          - expr: "result.text != 'forbidden'"
          - judged: {statement: "the text is polite", stakes: STAKES}
"""


LANE = "main/w/claude"


def judged_workspace(tmp_path: Path, rules: list[dict[str, Any]] | None = None) -> Workspace:
    """Agents configured (scripted by `rules`; without them the writer is never called:
    results are reported by the test, as a consumer agent would), and a judge script that
    fails outputs containing RUDE and logs every question it is asked."""
    ws = make_workspace(tmp_path)
    ws.agents(rules or [])
    judge = tmp_path / "judge.py"
    judge.write_text(
        textwrap.dedent(
            f"""
            import json, sys
            with open({str(tmp_path / "judge.log")!r}, "a") as log:
                log.write(sys.argv[1].replace("\\n", " ") + "\\n")
            holds = "RUDE" not in sys.argv[1]
            print(json.dumps({{"holds": holds, "reason": "checked"}}))
            """
        )
    )
    argv = json.dumps([sys.executable, str(judge), "{prompt}"])
    config = ws.root / ".vivary" / "agents.toml"
    config.write_text(config.read_text() + f"[judge]\nargv = {argv}\ntimeout_s = 60\n")
    approve_agents(ws.root)
    return ws


def judge_calls(tmp_path: Path) -> int:
    log = tmp_path / "judge.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def run_once(runs: Runs, run_id: str, text: str, stakes: str = "cheap", spec: str = JUDGED_SPEC) -> dict[str, Any]:
    """Plan a run named `run_id`, report `text` for its step, return its audit."""
    snap = runs.plan(spec.replace("STAKES", stakes), {}, run_id).snap
    token = snap.state["scope"]["steps"]["w"]["dispatchToken"]
    runs.done(run_id, "w", token, {"output": {"text": text}})
    return runs.audit(run_id)


def decisions(audit: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in audit["events"] if e["type"] in ("verified", "skipped") and "lane" in e.get("detail", {})]


def lane_evidence(kind: str, second: int) -> dict[str, Any]:
    return {"kind": kind, "lane": LANE, "runId": f"r{second}", "stepId": "w", "attempt": 1,
            "specDigest": "s", "configDigest": "c", "checked": True, "at": f"2026-01-01T00:00:{second:02d}Z"}
