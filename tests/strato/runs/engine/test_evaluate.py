"""`evaluate` steps: a real command run once in the workspace root with its rendered
`in` on stdin; the last JSON object it prints is checked against `out`. Failures are
final: no retry (and the spec language allows no `on_fail` on evaluate)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from strato.agents import trust
from strato.runs.engine.state import Refused
from tests.support.approvals import approve_spec
from tests.support.flows import make_workspace

EVALUATE = """
version: 1
contracts:
  Words: {text: string}
  Count: {words: integer, root: string}
flows:
  entry: main
  main:
    input: {text: string}
    output: {from: "${count.output}", contract: Count}
    steps:
      - id: write
        do: "Write about ${input.text}"
        out: Words
      - id: count
        evaluate:
          command: COMMAND
          in: {text: "${write.output.text}", topic: "${input.text}"}
          timeout_ms: TIMEOUT
        out: Count
"""

TOOL = """
import json, os, sys
data = json.load(sys.stdin)
with open("calls.log", "a") as log:
    log.write(json.dumps(data) + "\\n")
mode = sys.argv[1]
if mode == "fail":
    print("broken", file=sys.stderr)
    sys.exit(4)
print("some chatter first")
words = len(data["text"].split()) if mode == "ok" else "many"
print(json.dumps({"words": words, "root": os.getcwd()}))
"""


def _run(tmp_path: Path, command: str, timeout: int = 60000, revoke: bool = False) -> tuple[Path, dict[str, Any]]:
    ws = make_workspace(tmp_path, {"tool.py": TOOL})
    runs = ws.runs()
    spec = EVALUATE.replace("COMMAND", json.dumps(command)).replace("TIMEOUT", str(timeout))
    approve_spec(ws.root, spec)
    run_id = runs.plan(spec, {"text": "bees"}).snap.run_id
    if revoke:  # as on a clone the run ref was fetched into: nobody approved it there
        trust.revoke(ws.root, "spec", "spec.yaml")
    [entry] = runs.engine(runs.load(run_id)).ready()
    snap = runs.done(run_id, "write", entry["dispatchToken"], {"output": {"text": "three small words"}}).snap
    return ws.root, snap.state


def _calls(root: Path) -> list[Any]:
    log = root / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_evaluate_runs_the_command_with_its_input_and_checks_the_output(tmp_path: Path) -> None:
    root, state = _run(tmp_path, f"{sys.executable} tool.py ok")
    assert state["status"] == "completed", state.get("failure")
    assert state["output"] == {"words": 3, "root": str(root)}
    assert _calls(root) == [{"text": "three small words", "topic": "bees"}]


def test_a_failing_command_is_final_and_fails_the_run(tmp_path: Path) -> None:
    root, state = _run(tmp_path, f"{sys.executable} tool.py fail")
    count = state["scope"]["steps"]["count"]
    assert count["status"] == "failed" and count["failure"]["reason"] == "evaluate: exited 4: broken"
    assert len(_calls(root)) == 1  # no retry
    assert state["status"] == "failed" and state["failure"]["reason"] == "evaluate: exited 4: broken"


def test_output_that_breaks_the_contract_fails_the_step(tmp_path: Path) -> None:
    root, state = _run(tmp_path, f"{sys.executable} tool.py wrong")
    count = state["scope"]["steps"]["count"]
    assert count["status"] == "failed" and "words" in count["failure"]["reason"]
    assert len(_calls(root)) == 1 and state["status"] == "failed"


def test_a_command_past_its_timeout_is_killed_and_fails(tmp_path: Path) -> None:
    _root, state = _run(tmp_path, "sleep 30", timeout=300)
    count = state["scope"]["steps"]["count"]
    assert count["failure"]["reason"] == "evaluate: timed out after 0.3s"
    assert state["status"] == "failed"


def test_a_spec_nobody_approved_is_refused_before_its_run_exists(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"tool.py": TOOL})
    spec = EVALUATE.replace("COMMAND", json.dumps("touch ran")).replace("TIMEOUT", "60000")
    runs = ws.runs()
    with pytest.raises(Refused) as refused:
        runs.plan(spec, {"text": "bees"})
    assert refused.value.code == "untrusted" and "sh -c 'touch ran'" in str(refused.value)
    assert runs.store.run_ids() == [] and not (ws.root / "ran").exists()


def test_a_run_whose_spec_is_not_approved_here_fails_the_step_and_runs_nothing(tmp_path: Path) -> None:
    root, state = _run(tmp_path, f"{sys.executable} tool.py ok", revoke=True)
    reason = state["scope"]["steps"]["count"]["failure"]["reason"]
    assert reason.startswith("evaluate: this spec is not approved for this repository; it would run sh -c ")
    assert "strato run FILE" in reason and "\n" not in reason
    assert _calls(root) == [] and state["status"] == "failed"
