"""What a worker fetches: busy, only its runs' heads (a cancel or a rewrite is seen all
the same); the whole run when it has room, folds, or lost a pick. With real clones of
one bare remote: a busy worker still stops for a cancel, and an expired claim on a run
whose workers are all busy is still taken over once they run out of unclaimed items."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from strato.runs.service import Runs
from strato.runs.workers.shared import shared_run
from tests.support.repos import git, write_files
from tests.support.runs import calls, fanout_spec, kill_hostiles, pids, strato, wait_for
from tests.support.workers import (
    agent_pids,
    finished,
    kill,
    machines,
    push_claim,
    remote_run,
    share,
    transitions,
    worker,
)


def _plan_fanout(planner: Path, mode: str, tag: str, items: list[str], concurrency: int = 2) -> None:
    spec = fanout_spec(mode).replace("concurrency: 2", f"concurrency: {concurrency}")
    write_files(planner, {"fan.yaml": spec})
    code, _, err = strato(planner, "flow", "plan", str(planner / "fan.yaml"), "--input", f"tag={tag}",
                          "--input", f"items={json.dumps(items)}", "--id", "r1")
    assert code == 0, err
    share(planner, "r1")


def test_a_head_fetch_brings_the_head_and_no_claim_and_a_whole_fetch_brings_both(tmp_path: Path) -> None:
    bare, (planner, one) = machines(tmp_path, 2)
    _plan_fanout(planner, "slow", "h1", ["a", "b"])
    shared = shared_run(Runs(one), "origin", "r1")
    # another clone claims something and cancels the run
    claim = "refs/vivary/runs/r1/claims/fan.e0.a0.i0"
    push_claim(planner, claim, {"lease.json": b'{"state": "held"}'})
    code, _, err = strato(planner, "flow", "cancel", "r1", "--remote", "origin", "--reason", "enough")
    assert code == 0, err
    assert shared.fetch_heads(["r1"]) == []
    assert shared.runs.store.load("r1").state["status"] == "cancelled"  # the cancel is seen
    assert shared.claim_tip("r1", "fan.e0.a0.i0") is None  # the claim is not fetched
    assert (shared.whole_fetches, shared.head_fetches) == (1, 1)
    assert shared.fetch("r1") == []
    assert shared.claim_tip("r1", "fan.e0.a0.i0") == git(bare, "rev-parse", claim).strip()
    # a folder's look: the head and the claims it names (moved on: done), no other claim
    push_claim(planner, claim, {"lease.json": b'{"state": "done"}'})
    push_claim(planner, "refs/vivary/runs/r1/claims/fan.e0.a0.i1", {"lease.json": b'{"state": "held"}'})
    assert shared.fetch_heads(["r1"], [claim]) == []
    assert shared.lease_at(shared.claim_tip("r1", "fan.e0.a0.i0") or "").state == "done"
    assert shared.claim_tip("r1", "fan.e0.a0.i1") is None


def test_a_head_fetch_finds_a_rewritten_run_as_a_whole_one_does(tmp_path: Path) -> None:
    bare, (planner, one) = machines(tmp_path, 2)
    _plan_fanout(planner, "slow", "h2", ["a"])
    shared = shared_run(Runs(one), "origin", "r1")
    code, _, err = strato(planner, "flow", "cancel", "r1", "--remote", "origin", "--reason", "enough")
    assert code == 0, err
    planned = git(bare, "rev-parse", "refs/vivary/runs/r1/head").strip()
    assert shared.fetch_heads(["r1"]) == []
    git(bare, "update-ref", "refs/vivary/runs/r1/head", git(bare, "rev-parse", f"{planned}^").strip())
    [rewritten] = shared.fetch_heads(["r1"])
    assert rewritten.code == "run_rewritten" and rewritten.run_id == "r1"


def test_busy_workers_that_fetch_only_the_head_still_stop_for_a_cancel(tmp_path: Path) -> None:
    bare, (planner, one, two) = machines(tmp_path, 3)
    _plan_fanout(planner, "hostile", "c2", ["a", "b", "c", "d"])
    procs = [worker(root, "--run", "r1", "--interval", "0.05") for root in (one, two)]
    try:
        wait_for(lambda: len(pids(one, "c2") + pids(two, "c2")) == 8, "both workers' agents forked")
        time.sleep(1.5)  # both busy (one item each, --max-parallel 1): a busy worker fetched its head
        code, view, err = strato(planner, "flow", "cancel", "r1", "--remote", "origin", "--reason", "enough")
        assert code == 0 and view["status"] == "cancelled", err
        reports = [finished(p) for p in procs]
    finally:
        for root in (one, two):
            kill_hostiles(root)
    for code, report, err in reports:
        assert code == 0 and report is not None and report["runs"] == {"r1": "cancelled"}, err
        assert report["agentsStopped"] == 1, report
    # one of them folds (the lowest slot's holder) and fetches the whole run; the other,
    # busy, fetched only the head, and saw the cancel there
    assert any(r["headFetches"] >= 1 for _, r, _ in reports if r is not None), reports
    assert remote_run(bare, "r1")["status"] == "cancelled"


def test_an_expired_item_claim_is_taken_over_though_every_worker_is_busy(tmp_path: Path) -> None:
    bare, (planner, doomed, one, two) = machines(tmp_path, 4)
    items = ["a", "b", "c", "d", "e", "f", "g", "h"]
    _plan_fanout(planner, "slow", "x1", items, concurrency=3)
    first = worker(doomed, "--run", "r1", "--lease-ttl", "1", "--interval", "0.05", env={"SLOW_S": "30"})
    wait_for(lambda: calls(tmp_path, "x1"), "the doomed worker's agent starts")
    first.kill()
    first.wait()
    [lost] = calls(tmp_path, "x1")
    procs = [worker(root, "--run", "r1", "--lease-ttl", "1", "--interval", "0.05") for root in (one, two)]
    reports = [finished(p) for p in procs]
    for pid in agent_pids(tmp_path, "x1"):
        kill(pid)
    for code, report, err in reports:
        assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
    assert sum(r["takeovers"] for _, r, _ in reports if r is not None) == 1
    history = transitions(bare, "r1")
    done = [t for t in history if t["op"] == "fanout_item"]
    assert Counter(t["item"] for t in done) == Counter(range(len(items)))  # each recorded once
    [taken] = [t for t in done if "takeover" in t["worker"]]
    assert items[taken["item"]] == lost  # the dead worker's item, run again by its taker
    debits = Counter(ev["detail"]["dispatchId"] for t in history for ev in t.get("events", [])
                     if ev["type"] == "usage_debit")
    assert set(debits.values()) == {1}



def test_a_busy_folder_that_fetches_only_some_claims_folds_every_result_once(tmp_path: Path) -> None:
    bare, (planner, one, two) = machines(tmp_path, 3)
    items = [f"i{n}" for n in range(12)]
    _plan_fanout(planner, "slow", "f3", items)
    # items of 0.3 s, two at a time: the folder is busy for seconds, looking at the
    # claims it saw held every second and at the whole run every few
    procs = [worker(root, "--run", "r1", "--interval", "0.05", env={"SLOW_S": "0.3"}) for root in (one, two)]
    reports = [finished(p) for p in procs]
    for code, report, err in reports:
        assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
    folded = [r for _, r, _ in reports if r is not None and r["folds"]]
    assert sum(r["resultsFolded"] for _, r, _ in reports if r is not None) == len(items)
    assert any(r["headFetches"] >= 1 for r in folded), reports  # a look at only some claims
    history = transitions(bare, "r1")
    assert Counter(t["item"] for t in history if t["op"] == "fanout_item") == Counter(range(len(items)))
    debits = Counter(ev["detail"]["dispatchId"] for t in history for ev in t.get("events", [])
                     if ev["type"] == "usage_debit")
    assert set(debits.values()) == {1}
