"""`evaluate` steps: a real command run once in the workspace root with its rendered
`in` on stdin; the last JSON object it prints is checked against `out`. Failures are
final: no retry (and the spec language allows no `on_fail` on evaluate)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.strato.flow.engine_helpers import make_workspace

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


def _run(tmp_path: Path, command: str, timeout: int = 60000) -> tuple[Path, dict[str, Any]]:
    ws = make_workspace(tmp_path, {"tool.py": TOOL})
    runs = ws.runs()
    spec = EVALUATE.replace("COMMAND", json.dumps(command)).replace("TIMEOUT", str(timeout))
    run_id = runs.plan(spec, {"text": "bees"}).snap.run_id
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
