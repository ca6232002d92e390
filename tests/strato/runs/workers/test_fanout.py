"""An engine-mode fanout carried by several workers: each item is claimed on its own with
one of the fanout's concurrency slots (so `concurrency` holds across machines), run and
recorded as a local fanout records it, and the fanout is settled once, by one worker."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from tests.support.repos import git, write_files
from tests.support.runs import fanout_spec, strato
from tests.support.workers import (
    all_calls,
    claim_refs,
    finished,
    machines,
    remote_run,
    share,
    transitions,
    worker,
)


def test_three_workers_share_a_fanouts_items_and_one_settles_it(tmp_path: Path) -> None:
    bare, (planner, *hands) = machines(tmp_path, 4)
    write_files(planner, {"fan.yaml": fanout_spec("slow")})
    items = json.dumps(["a", "b", "c", "d", "e"])
    code, _, err = strato(planner, "flow", "plan", str(planner / "fan.yaml"), "--input", "tag=f1",
                          "--input", f"items={items}", "--id", "r1")
    assert code == 0, err
    share(planner, "r1")
    procs = [worker(root, "--run", "r1", "--interval", "0.05", "--max-parallel", "2") for root in hands]
    reports = [finished(p) for p in procs]
    for code, report, err in reports:
        assert code == 0, err
        assert report is not None and report["runs"] == {"r1": "completed"}, err
    assert remote_run(bare, "r1")["status"] == "completed"
    # each item's first stage once, its check wrong once then right: as a local fanout calls them
    assert all_calls(tmp_path, "f1") == sorted(
        [*"abcde", *(f"{i}-check" for i in "abcde" for _ in range(2)), "finish"])
    history = transitions(bare, "r1")
    assert sorted(t["item"] for t in history if t["op"] == "fanout_item") == [0, 1, 2, 3, 4]
    assert [t["op"] for t in history].count("fanout_settle") == 1
    assert all("worker" in t for t in history if t["op"] in ("fanout_item", "fanout_settle"))
    debits = Counter(ev["detail"]["dispatchId"] for t in history for ev in t.get("events", [])
                     if ev["type"] == "usage_debit")
    assert len(debits) == 5 * 3 + 1 and set(debits.values()) == {1}  # every call debited once
    names = {ref.rsplit("/", 1)[1] for ref in claim_refs(bare, "r1")}
    # concurrency 2 on every machine together: two slots, each item claimed once, one settling
    slots = {n for n in names if re.fullmatch(r"fan\.e0\.a0\.s\d+", n)}
    assert slots and slots <= {"fan.e0.a0.s0", "fan.e0.a0.s1"}
    assert names - slots == {"fan.e0.a0.settle", "finish.g1", *(f"fan.e0.a0.i{i}" for i in range(5))}
    for ref in claim_refs(bare, "r1"):
        assert json.loads(git(bare, "show", f"{ref}:lease.json"))["state"] == "done"



def test_an_items_result_push_claims_the_workers_next_item(tmp_path: Path) -> None:
    # one push per item: the push that lands an item's result creates the next item's
    # claim and moves the concurrency slot on to it (held to held, never done between)
    bare, (planner, hand) = machines(tmp_path, 2)
    write_files(planner, {"fan.yaml": fanout_spec("slow").replace("concurrency: 2", "concurrency: 1")})
    code, _, err = strato(planner, "flow", "plan", str(planner / "fan.yaml"), "--input", "tag=h1",
                          "--input", 'items=["a", "b", "c", "d"]', "--id", "r1")
    assert code == 0, err
    share(planner, "r1")
    code, report, err = finished(worker(hand, "--run", "r1", "--interval", "0.05"))
    assert code == 0 and report is not None and report["runs"] == {"r1": "completed"}, err
    # the first item's claim, four results (three carrying the next claim), the folds of
    # the results into the head, the settling's claim and result, the last step's claim
    # and result: no push of a claim of its own
    assert (report["claimed"], report["done"], report["pushesRejected"]) == (6, 6, 0)
    assert report["pushes"] == 9 + report["folds"] and report["resultsFolded"] == 4
    history = transitions(bare, "r1")
    assert sorted(t["item"] for t in history if t["op"] == "fanout_item") == [0, 1, 2, 3]
    slot = "refs/vivary/runs/r1/claims/fan.e0.a0.s0"
    states = [json.loads(git(bare, "show", f"{c}:lease.json")) for c in git(bare, "rev-list", slot).split()]
    assert [s["state"] for s in states] == ["done", *["held"] * 4]
    assert sorted(s["item"] for s in states[1:]) == [0, 1, 2, 3]
    # each item's result is data in its claim's done commit, and the head records it once
    for index in range(4):
        item = f"refs/vivary/runs/r1/claims/fan.e0.a0.i{index}"
        assert json.loads(git(bare, "show", f"{item}:lease.json"))["state"] == "done"
        ops = json.loads(git(bare, "show", f"{item}:result.json"))["ops"]
        assert [op["op"] for op in ops] == [t["op"] for t in history if t.get("item") == index]
