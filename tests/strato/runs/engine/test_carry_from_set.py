"""A carry whose `initial` comes from a `set` step: the set step settles while the engine
starts steps, so the step after it must see the carry it wrote (it failed with
"`${wave}`: reference output is unavailable" on 7f21ccb, where only a `do` source worked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.flows import make_workspace

SPEC = """
version: 1
contracts:
  Wave: {tasks: "string[]"}
  Done: {summary: string}
flows:
  entry: waves
  waves:
    input: {goal: string, tasks: "string[]"}
    output: {from: "${build.output}", contract: Done}
    carry:
      wave:
        initial: "${SOURCE.output.tasks}"
    steps:
SOURCE_STEP
      - id: build
        after: [SOURCE]
        do: "Build the wave ${wave} for ${input.goal}"
        out: Done
        attempts: 1
"""
SET = """      - id: first_wave
        set:
          tasks: "input.tasks"
        out: Wave
"""
DO = """      - id: first_wave
        do: "Plan ${input.goal}"
        out: Wave
"""


@pytest.mark.parametrize("source", [SET, DO])
def test_the_step_after_a_carry_source_reads_the_carry(tmp_path: Path, source: str) -> None:
    runs = make_workspace(tmp_path).runs()
    spec = SPEC.replace("SOURCE_STEP\n", source).replace("SOURCE", "first_wave")
    snap = runs.plan(spec, {"goal": "release", "tasks": ["lint", "test"]}).snap
    if source is DO:
        [entry] = runs.engine(snap).ready()
        snap = runs.done(snap.run_id, "first_wave", entry["dispatchToken"],
                         {"output": {"tasks": ["lint", "test"]}}).snap
    assert snap.state["status"] == "running", snap.state.get("failure")
    assert snap.state["carry"]["wave"]["value"] == ["lint", "test"]
    assert snap.state["carry"]["wave"]["provenance"]["sourceStep"] == "first_wave"
    [entry] = runs.engine(snap).ready()
    assert entry["id"] == "build" and entry["do"] == 'Build the wave ["lint","test"] for release'
    assert entry["attempt"] == 1  # no attempt burnt on a carry not yet written
    results = [e for e in runs.audit(snap.run_id)["events"] if e["type"] == "result"]
    assert all(e["detail"]["success"] for e in results), results
