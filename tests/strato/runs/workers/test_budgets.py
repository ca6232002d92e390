"""A budgeted fanout carried by several workers at once: each item's dispatch is reserved
on the run head before its agent starts (a push of its own, compare-and-swap on the
head), so the workers together start exactly the calls the budget allows, and the run
ends as the same spec run alone on one clone ends."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.repos import git, write_files
from tests.support.runs import calls, strato
from tests.support.workers import all_calls, finished, machines, remote_run, share, transitions, worker

ITEMS = [f"x{i}" for i in range(12)]
LIMIT = 5

SPEC = f"""\
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      tag: string
      items: "string[]"
    output:
      from: "${{finish.output}}"
      contract: Note
    steps:
      - id: fan
        budget: {{dispatches: {LIMIT}}}
        fanout:
          over: "${{input.items}}"
          concurrency: 4
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "slow ${{item}} ${{input.tag}}"
              agent: claude
              out: Note
      - id: finish
        after: [fan]
        do: "slow finish ${{input.tag}}"
        agent: claude
        out: Note
"""


def _outcome(state: dict[str, Any]) -> dict[str, Any]:
    """What a run's end says, whichever items happened to get the dispatches: its
    status and failure, the fanout's, and how many items ended each way and why."""
    fan = state["scope"]["steps"]["fan"]
    items = fan["fanout"]["items"]
    return {
        "status": state["status"], "failure": state.get("failure"),
        "fan": (fan["status"], fan.get("failure", {}).get("reason")),
        "spent": fan["spent"]["dispatches"],
        "dispatched": len(fan["fanout"]["dispatched"]),
        "items": Counter((it["status"], it.get("failure")) for it in items),
    }


def test_workers_on_three_clones_start_exactly_the_calls_a_dispatch_budget_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare, (planner, *hands, alone) = machines(tmp_path, 5)
    write_files(planner, {"fan.yaml": SPEC})
    code, _, err = strato(planner, "flow", "plan", str(planner / "fan.yaml"), "--input", "tag=b1",
                          "--input", f"items={json.dumps(ITEMS)}", "--id", "r1")
    assert code == 0, err
    share(planner, "r1")
    # agents slow enough that every worker's calls overlap the others'
    env = {"SLOW_S": "0.4"}
    procs = [worker(root, "--run", "r1", "--interval", "0.05", "--max-parallel", "2", env=env) for root in hands]
    for proc in procs:
        code, report, err = finished(proc)
        assert code == 0 and report is not None and report["runs"] == {"r1": "failed"}, err
    assert len(all_calls(tmp_path, "b1")) == LIMIT  # the agent processes that ever started
    state = remote_run(bare, "r1")
    history = transitions(bare, "r1")
    assert Counter(t["item"] for t in history if t["op"] == "fanout_item") == Counter(range(len(ITEMS)))
    dispatched = [t for t in history if t["op"] == "fanout_dispatch"]
    assert len(dispatched) == LIMIT and len({t["worker"]["id"] for t in history if "worker" in t}) > 1
    debits = Counter(ev["detail"]["dispatchId"] for t in history for ev in t.get("events", [])
                     if ev["type"] == "usage_debit")
    assert len(debits) == LIMIT and set(debits.values()) == {1}  # each dispatch debited once
    # the same spec run alone on one clone ends the same way
    write_files(alone, {"fan.yaml": SPEC})
    monkeypatch.setenv("CALLS_DIR", str(tmp_path))
    monkeypatch.setenv("SLOW_S", "0.05")
    code, _, err = strato(alone, "run", str(alone / "fan.yaml"), "--input", "tag=b2",
                              "--input", f"items={json.dumps(ITEMS)}", "--id", "r2")
    assert code == 1, err
    assert len(calls(tmp_path, "b2")) == LIMIT
    assert _outcome(state) == _outcome(remote_run(alone, "r2"))  # read from the clone's own refs
    git(planner, "fetch", "-q", "origin", "+refs/vivary/runs/*:refs/vivary/runs/*")
    code, audit, err = strato(planner, "flow", "audit", "r1")
    assert code == 0, err
    assert audit["status"] == "failed" and audit["head"] == git(bare, "rev-parse", "refs/vivary/runs/r1/head").strip()
    assert sum(ev["type"] == "fanout_item_dispatched" for ev in audit["events"]) == LIMIT
    assert sum(ev["type"] == "usage_debit" for ev in audit["events"]) == LIMIT
