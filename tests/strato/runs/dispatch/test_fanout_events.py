"""One fanout spec run three ways, its items' agents the same subprocess script (wrong
once, then right; one item's last stage skipped): handed out to a consumer client that
runs the script itself, run by the engine in the foreground, and by a background
runner through its dispatch processes. The wire events of all three are one sequence,
each valid against the reference's payloads, but for when each happened and what the
usage was and who measured it (the client reported it; the engine measured its own)."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from strato.agents.calls import agent_prompt, call
from strato.mcp.contract import event_violations
from strato.runs.background import runner as background
from strato.runs.dispatch.fanout import record_attempt, record_dispatch
from strato.runs.engine.state import RUN_TERMINAL
from strato.runs.service import Runs
from strato.runs.views import wire
from tests.support.runs import calls, ended, is_runner, kill_hostiles, make_workspace, runner_pid, wait_for

SPEC = """\
version: 1
contracts:
  Note: {text: string}
  Total: {n: integer}
flows:
  entry: main
  main:
    input: {tag: string, items: "string[]"}
    output: {from: "${total.output}", contract: Total}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 1
          isolation: none
          require: any
          merge: sequential
          DISPATCH
          steps:
            - do: "wrong ${item} ${input.tag}"
              agent: claude
              out: Note
              ensure:
                - expr: "result.text == 'right'"
              attempts: 3
            - do: "slow ${item}-end ${input.tag}"
              agent: claude
              out: Note
              when: "item != 'c'"
      - id: total
        after: [fan]
        set: {n: "len(result.fan)"}
        out: Total
"""

ITEMS = ["a", "b", "c"]
# what each agent process was asked for (the script's log): the same in every mode
CALLS = ["a", "a", "a-end", "b", "b", "b-end", "c", "c"]


@pytest.fixture
def workspace(repo_dir: Path) -> Iterator[Path]:
    yield make_workspace(repo_dir)
    kill_hostiles(repo_dir)


def _spec(consumer: bool) -> str:
    return SPEC.replace("          DISPATCH\n", "          dispatch: consumer\n" if consumer else "")


def _as_consumer(root: Path, tag: str) -> str:
    """A client that takes each ready item, runs the agent script on its prompt as the
    engine would, and reports the output (or the failure) with its usage."""
    runs = Runs(root)
    run_id = runs.plan(_spec(True), {"tag": tag, "items": ITEMS}).snap.run_id
    agent = runs.config.get("claude")
    for _ in range(50):  # the bound only keeps a broken run from looping forever
        snap = runs.load(run_id)
        if snap.state["status"] in RUN_TERMINAL:
            return run_id
        (entry,) = runs.engine(snap).ready()
        res = call(agent, agent_prompt(entry), root)
        answer = {"failure": res.failure} if res.failure else {"output": res.output}
        runs.done(run_id, entry["id"], entry["dispatchToken"], {**answer, "usage": {"ms": res.duration_ms}})
    raise AssertionError(f"the consumer run {run_id} never ended")


def _in_the_foreground(root: Path, tag: str) -> str:
    runs = Runs(root)
    run_id = runs.plan(_spec(False), {"tag": tag, "items": ITEMS}).snap.run_id
    runs.drive(run_id)
    return run_id


def _in_the_background(root: Path, tag: str) -> str:
    run_id = background.start(Runs(root), _spec(False), {"tag": tag, "items": ITEMS})
    ended(root, run_id)
    return run_id


def _comparable(event: dict[str, Any]) -> dict[str, Any]:
    """The event less when it happened and the usage: amounts, telemetry, the measure's
    source and its dispatch id (fresh in each run)."""
    out = {k: v for k, v in event.items() if k != "at"}
    detail = dict(out.get("detail", {}))
    if event["type"] == "usage_debit":
        for key in ("amount", "model", "durationMs", "dispatchId", "source", "reportedAt", "effort"):
            detail.pop(key, None)
    if event["type"] == "fanout_ledger_debit" and detail.get("source") != "dispatch":
        detail.pop("amount")
        detail.pop("source")
    if "detail" in out:
        out["detail"] = detail
    return out


def _wire(root: Path, run_id: str) -> list[dict[str, Any]]:
    events = wire.events(Runs(root), run_id)
    for ev in events:
        assert event_violations(ev) == [], ev
    return [_comparable(ev) for ev in events]


def test_an_engine_fanout_sends_the_events_a_consumer_fanout_of_the_same_spec_sends(workspace: Path) -> None:
    runs = {
        "consumer": _as_consumer(workspace, "con"),
        "foreground": _in_the_foreground(workspace, "fg"),
        "background": _in_the_background(workspace, "bg"),
    }
    for tag in ("con", "fg", "bg"):
        assert calls(workspace, tag) == CALLS
    sequences = {mode: _wire(workspace, run_id) for mode, run_id in runs.items()}
    consumer = sequences["consumer"]
    assert sequences["foreground"] == consumer
    assert sequences["background"] == consumer

    # the sequence itself: item a, as each item goes
    fanout = [(e["type"], e.get("detail", {})) for e in consumer if e.get("stepId") == "fan"]
    reason = "ensure[0] failed: result.text == 'right'"
    first = {"itemIndex": 0, "stage": 0, "attempt": 1}
    assert fanout[:14] == [
        ("fanout_item_ready", {"itemIndex": 0}),
        ("fanout_ledger_debit", {"itemIndex": 0, "amount": {"dispatches": 1}, "source": "dispatch"}),
        ("fanout_item_dispatched", first),
        ("usage_debit", {"seq": 1, "epoch": 0, "attempt": 1, "item": {"itemIndex": 0, "stage": 0, "generation": 1}}),
        ("fanout_ledger_debit", {"itemIndex": 0}),
        ("fanout_attempt_result", {**first, "success": False, "failure": {"kind": "result", "reason": reason}}),
        ("fanout_item_ready", {"itemIndex": 0}),
        ("fanout_ledger_debit", {"itemIndex": 0, "amount": {"dispatches": 1}, "source": "dispatch"}),
        ("fanout_item_dispatched", {**first, "attempt": 2}),
        ("usage_debit", {"seq": 2, "epoch": 0, "attempt": 2, "item": {"itemIndex": 0, "stage": 0, "generation": 2}}),
        ("fanout_ledger_debit", {"itemIndex": 0}),
        ("fanout_attempt_result", {**first, "attempt": 2, "success": True}),
        ("fanout_item_ready", {"itemIndex": 0}),
        ("fanout_ledger_debit", {"itemIndex": 0, "amount": {"dispatches": 1}, "source": "dispatch"}),
    ]
    results = [(d["itemIndex"], d["stage"], d["attempt"], d["success"]) for k, d in fanout if k == "fanout_attempt_result"]
    assert results == [(0, 0, 1, False), (0, 0, 2, True), (0, 1, 1, True),
                       (1, 0, 1, False), (1, 0, 2, True), (1, 1, 1, True),
                       (2, 0, 1, False), (2, 0, 2, True)]
    assert [d for k, d in fanout if k == "fanout_item_skipped"] == [{"itemIndex": 2, "stage": 1}]
    assert consumer[-1] == {"type": "completed", "detail": {"output": {"n": 3}}}


@pytest.mark.slow  # the slow tier: a kill -9 campaign
def test_a_background_runner_killed_mid_fanout_sends_each_items_events_once(workspace: Path) -> None:
    """kill -9 of the runner at random points of the fanout (while an agent runs, just
    after one answered, between the transitions of one call); polls start a new runner.
    The run's wire events are still the consumer run's sequence: no call dispatched,
    settled or debited twice (the runners' `resumed`, if any, aside)."""
    if os.nice(0) < 19:
        os.nice(19 - os.nice(0))  # a heavy loop on a shared machine: everything it starts inherits this
    want = _wire(workspace, _as_consumer(workspace, "con"))
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    kills = 0
    for i in range(4):
        tag = f"k{i}"
        run_id = background.start(Runs(workspace), _spec(False), {"tag": tag, "items": ITEMS})
        for after in sorted(rng.sample(range(1, len(CALLS)), 2)):

            def due(tag: str = tag, after: int = after, run_id: str = run_id) -> bool:
                polled = background.poll(Runs(workspace), run_id)  # restarts a dead runner
                return len(calls(workspace, tag)) >= after or polled["bg"]["status"] in RUN_TERMINAL

            wait_for(due, f"{after} calls of {tag}")
            time.sleep(rng.uniform(0, 0.3))  # a random point, not a wait for an event
            pid = runner_pid(workspace, run_id)
            if pid is not None and is_runner(pid):
                os.kill(pid, signal.SIGKILL)
                kills += 1
        ended(workspace, run_id)
        assert calls(workspace, tag) == CALLS, f"seed {seed}, run {i}"
        got = [e for e in _wire(workspace, run_id) if e["type"] != "resumed"]
        assert got == want, f"seed {seed}, run {i}"
    assert kills >= 4, f"seed {seed}: only {kills} kills landed on a live runner"


def test_a_worktree_item_run_afresh_remakes_a_settled_call_and_follows_what_was_recorded(
    workspace: Path,
) -> None:
    """A runner died after an item's call was settled but before the item was: its
    worktree is gone, so the call is made again (its edits remade, its spend debited as
    a call of its own), while the attempt keeps the outcome the run recorded and is not
    settled twice."""
    spec = _spec(False).replace("isolation: none", "isolation: worktree")
    runs = Runs(workspace)
    run_id = runs.plan(spec, {"tag": "wt", "items": ["a"]}).snap.run_id
    made: dict[str, Any] = {
        "dispatchId": "first-call",
        "stage": 0,
        "attempt": 1,
        "usage": {"ms": 5},
        "telemetry": {"durationMs": 5, "model": "claude"},
        "inputs": "sha256:x",
    }
    verdict: dict[str, Any] = {"output": {"text": "recorded"}, "failure": None, "events": [], "evidence": []}
    runs.apply(run_id, "fanout_dispatch", partial(record_dispatch, path="fan", index=0, stage=0, attempt=1))
    runs.apply(run_id, "fanout_attempt", partial(record_attempt, path="fan", index=0, made=made, verdict=verdict))
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed"
    (item,) = snap.state["scope"]["steps"]["fan"]["fanout"]["items"]
    assert item["attempts"][0] == {"stage": 0, "attempt": 1, "result": {"text": "recorded"}, "failure": None}
    events = _wire(workspace, run_id)
    kinds = [e["type"] for e in events if e.get("stepId") == "fan"]
    assert kinds.count("fanout_item_dispatched") == 2  # stage 0 once, stage 1
    assert kinds.count("fanout_attempt_result") == 2
    debits = [e["detail"]["attempt"] for e in events if e["type"] == "usage_debit"]
    assert debits == [1, 1, 1]  # the recorded call, stage 1's, and stage 0's call made again
