"""Run semantics in consumer mode (results reported with tokens, as an outside agent
would): retries, on_fail, when, set, gates with revise rounds and kill, carry,
budgets, checkpoints, and the refusals that must change nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strato.runs.engine.state import Refused
from strato.runs.service import Runs, SpecInvalid
from strato.runs.store import CheckpointNotFound
from tests.support.flows import event_types, make_workspace
from tests.support.specs import review_spec

REVIEW = review_spec()

BUDGET = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${c.output}", contract: R}
    budget: {dispatches: 2}
    steps:
      - id: a
        do: "a"
        out: R
      - id: b
        after: [a]
        do: "b"
        out: R
      - id: c
        after: [b]
        do: "c"
        out: R
"""

SET_WHEN = """
version: 1
contracts:
  N: {n: integer}
  Out: {total: integer, label: string}
flows:
  entry: main
  main:
    input: {x: integer}
    output: {from: "${total.output}", contract: Out}
    steps:
      - id: count
        do: "count"
        out: N
      - id: big
        after: [count]
        when: "result.count.n > 10"
        do: "big"
        out: N
      - id: total
        after: [count, big]
        set:
          total: "result.count.n + input.x"
          label: "'small'"
        out: Out
        ensure:
          - expr: "result.total < 100"
"""


def _ready(runs: Runs, run_id: str) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in runs.engine(runs.load(run_id)).ready()}


def _done(runs: Runs, run_id: str, step: str, output: Any, **extra: Any) -> Any:
    entry = _ready(runs, run_id)[step]
    return runs.done(run_id, step, entry["dispatchToken"], {"output": output, **extra}).snap


def test_revise_resets_the_region_and_carries_the_note(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(REVIEW, {"topic": "bees"}).snap.run_id
    assert _ready(runs, run_id)["draft"]["do"] == "Draft bees; notes: bees"
    _done(runs, run_id, "draft", {"text": "bees buzz"})
    snap = runs.gate(run_id, "review", "revise", note="thin").snap
    steps = snap.state["scope"]["steps"]
    assert steps["draft"]["status"] == "ready" and steps["draft"]["epoch"] == 1
    assert steps["review"]["status"] == "pending" and steps["review"]["iterations"] == 1
    assert snap.state["carry"]["notes"]["value"] == "bees buzz"
    assert _ready(runs, run_id)["draft"]["do"] == "Draft bees; notes: bees buzz"
    _done(runs, run_id, "draft", {"text": "bees buzz and dance"})
    # the carry survives the re-run of its initial source
    assert runs.load(run_id).state["carry"]["notes"]["value"] == "bees buzz"
    runs.gate(run_id, "review", "approve")
    snap = _done(runs, run_id, "polish", {"text": "Bees buzz and dance."})
    assert snap.state["status"] == "completed"
    types = event_types(runs.audit(run_id)["events"])
    assert "step_reset" in types and "carry_updated" in types


def test_revise_rounds_are_bounded(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(REVIEW, {"topic": "bees"}).snap.run_id
    for i in range(2):
        _done(runs, run_id, "draft", {"text": f"v{i}"})
        runs.gate(run_id, "review", "revise")
    _done(runs, run_id, "draft", {"text": "v2"})
    snap = runs.gate(run_id, "review", "revise").snap
    assert snap.state["status"] == "failed"
    assert snap.state["failure"]["reason"] == "gate revision rounds exhausted"


def test_kill_fails_the_run(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(REVIEW, {"topic": "bees"}).snap.run_id
    _done(runs, run_id, "draft", {"text": "bees"})
    snap = runs.gate(run_id, "review", "kill").snap
    assert snap.state["status"] == "failed"
    assert snap.state["failure"] == {"attempt": 0, "reason": "gate review killed flow", "killed": True}
    with pytest.raises(Refused):
        runs.gate(run_id, "review", "approve")


def test_stale_forged_and_not_ready_results_change_nothing(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(REVIEW, {"topic": "bees"}).snap.run_id
    token = _ready(runs, run_id)["draft"]["dispatchToken"]
    head = runs.load(run_id).head
    cases = [
        ("draft", "forged-token", {"output": {"text": "x"}}, "stale_token"),
        ("draft", "", {"output": {"text": "x"}}, "stale_token"),
        ("polish", token, {"output": {"text": "x"}}, "step_not_ready"),
        ("nope", token, {"output": {"text": "x"}}, "unknown_step"),
        ("draft", token, {"output": {"text": "x"}, "usage": {"usd": -1}}, "invalid_result"),
        ("draft", token, {"answer": 1}, "invalid_result"),
    ]
    for step, tok, result, code in cases:
        with pytest.raises(Refused) as info:
            runs.done(run_id, step, tok, result)
        assert info.value.code == code
    assert runs.load(run_id).head == head
    runs.done(run_id, "draft", token, {"output": {"text": "x"}})
    with pytest.raises(Refused) as info:  # the same token twice: already accepted
        runs.done(run_id, "draft", token, {"output": {"text": "x"}})
    assert info.value.code == "step_not_ready"
    gate_token = runs.load(run_id).state["scope"]["steps"]["review"]["gateToken"]
    with pytest.raises(Refused):
        runs.gate(run_id, "review", "approve", token="not-" + gate_token)


def test_budget_exhaustion_stops_the_run(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(BUDGET, {}).snap.run_id
    _done(runs, run_id, "a", {"n": 1})
    snap = _done(runs, run_id, "b", {"n": 2})
    assert snap.state["status"] == "budget_exhausted"
    assert snap.state["flowSpent"]["dispatches"] == 2
    assert "flow budget exhausted" in snap.state["failure"]["reason"]


def test_set_and_when(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(SET_WHEN, {"x": 5}).snap.run_id
    snap = _done(runs, run_id, "count", {"n": 3})
    assert snap.state["scope"]["steps"]["big"]["status"] == "skipped"
    assert snap.state["status"] == "completed"
    assert snap.state["output"] == {"total": 8, "label": "small"}


def test_set_ensure_failure_fails_without_retry(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(SET_WHEN, {"x": 500}).snap.run_id
    _done(runs, run_id, "count", {"n": 3})
    snap = runs.load(run_id)
    assert snap.state["status"] == "failed"
    assert snap.state["failure"]["reason"] == "ensure[0] failed: result.total < 100"


def test_checkpoint_revert_restores_state_and_rotates_tokens(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(REVIEW, {"topic": "bees"}).snap.run_id
    runs.commit(run_id, "start")
    old_token = _ready(runs, run_id)["draft"]["dispatchToken"]
    _done(runs, run_id, "draft", {"text": "first"})
    assert runs.load(run_id).state["scope"]["steps"]["review"]["status"] == "waiting_gate"
    snap = runs.revert(run_id, "start").snap
    steps = snap.state["scope"]["steps"]
    assert steps["draft"]["status"] == "ready" and steps["review"]["status"] == "pending"
    assert snap.state["flowSpent"]["dispatches"] == 1
    with pytest.raises(Refused):
        runs.done(run_id, "draft", old_token, {"output": {"text": "late"}})
    with pytest.raises(CheckpointNotFound) as info:
        runs.revert(run_id, "nope")
    assert info.value.available == ["start"]
    assert "checkpoint_reverted" in event_types(runs.audit(run_id)["events"])


def test_bad_input_and_bad_spec_are_refused_before_any_write(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    with pytest.raises(Refused) as info:
        runs.plan(REVIEW, {"topic": 3})
    assert info.value.code == "INPUT_CONTRACT_INVALID"
    with pytest.raises(SpecInvalid) as bad:
        runs.plan(REVIEW.replace("version: 1", "version: 2"), {"topic": "x"})
    assert bad.value.errors
    assert runs.store.run_ids() == []


def test_cancel_makes_tokens_stale(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(REVIEW, {"topic": "bees"}).snap.run_id
    token = _ready(runs, run_id)["draft"]["dispatchToken"]
    assert runs.cancel(run_id, "no longer needed").snap.state["status"] == "cancelled"
    with pytest.raises(Refused) as info:
        runs.done(run_id, "draft", token, {"output": {"text": "x"}})
    assert info.value.code == "run_not_running"


EARLY_OUTPUT = """
version: 1
contracts:
  Wide: {inner: object}
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output.inner}", contract: R}
    steps:
      - id: a
        do: "a"
        out: Wide
      - id: b
        after: [a]
        do: "b"
        out: R
"""


def test_flow_output_is_checked_as_soon_as_its_source_succeeds(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(EARLY_OUTPUT, {}).snap.run_id
    snap = _done(runs, run_id, "a", {"inner": {"n": "three"}})
    # b was never handed out: the output a produced can never satisfy the flow contract
    assert snap.state["status"] == "failed"
    assert snap.state["failure"]["reason"].startswith("flow output breaks contract R: ")
    assert snap.state["scope"]["steps"]["b"]["status"] == "pending"
    assert runs.engine(snap).ready() == []


def test_a_good_early_output_lets_the_flow_run_on(tmp_path: Path) -> None:
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(EARLY_OUTPUT, {}).snap.run_id
    snap = _done(runs, run_id, "a", {"inner": {"n": 3}})
    assert snap.state["status"] == "running"
    snap = _done(runs, run_id, "b", {"n": 4})
    assert snap.state["status"] == "completed" and snap.state["output"] == {"n": 3}


def test_gate_decisions_record_who_resolved_them(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    run_id = runs.plan(REVIEW, {"topic": "t"}).snap.run_id
    _done(runs, run_id, "draft", {"text": "x"})
    proc = ws.strato("flow", "gate", "approve", run_id, "review", "--resolved-by", "agent", "--json")
    assert proc.returncode == 0, proc.stderr
    resolved = [e for e in runs.audit(run_id)["events"] if e["type"] == "gate_resolved"]
    assert resolved[0]["detail"] == {"decision": "approve", "target": None, "resolvedBy": "agent"}
    gate = runs.load(run_id).state["scope"]["steps"]["review"]
    assert gate["attempts"][-1]["resolvedBy"] == "agent"
    bad = ws.strato("flow", "gate", "approve", run_id, "review", "--resolved-by", "robot")
    assert bad.returncode == 2 and "robot" in bad.stderr


BACKWARDS = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${e.output}", contract: R}
    steps:
      - {id: c, after: [b], set: {n: "result.b.n + 1"}, out: R}
      - {id: b, after: [a], set: {n: "result.a.n + 1"}, out: R}
      - {id: a, do: "first", out: R}
      - {id: e, after: [a], do: "last", out: R}
      - {id: d, after: [c], set: {n: "result.c.n + 1"}, out: R}
"""


def test_steps_declared_before_what_they_wait_on_start_in_the_same_transition(tmp_path: Path) -> None:
    """The advance pass runs again while it changes anything, and a later pass that
    starts a step looks at every step after it: `c` waits on `b`, declared after it,
    and `d` on `c` (declared after `e`, the last step the first pass changed)."""
    runs = make_workspace(tmp_path).runs()
    run_id = runs.plan(BACKWARDS, {}).snap.run_id
    entry = _ready(runs, run_id)["a"]
    out = runs.done(run_id, "a", entry["dispatchToken"], {"output": {"n": 1}})
    steps = out.snap.state["scope"]["steps"]
    assert {k: (v["status"], v.get("output")) for k, v in steps.items()} == {
        "a": ("succeeded", {"n": 1}), "b": ("succeeded", {"n": 2}), "c": ("succeeded", {"n": 3}),
        "d": ("succeeded", {"n": 4}), "e": ("ready", None)}
    started = [(e["type"], e.get("stepId")) for e in out.events if e["type"] in ("ready", "result")]
    assert started == [("result", "a"), ("result", "b"), ("ready", "e"), ("result", "c"), ("result", "d")]
