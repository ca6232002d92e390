"""A usage report replayed 100 times at once, from 4 processes of 25 threads each
against the real repository, is debited exactly once: the run's ref moves by
compare-and-swap, and every loser reloads and finds the dispatch already debited."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.flows import DISPATCH_SPEC, make_workspace
from tests.support.runs import PROCESSES, THREADS, replay_usage


def _usage_commits(root: Path) -> list[str]:
    log = subprocess.run(
        ["git", "-C", str(root), "log", "--format=%s", "refs/vivary/runs/r1/head"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [s for s in log.stdout.splitlines() if s == "run: usage"]


def test_a_usage_report_replayed_100_times_concurrently_is_debited_once(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    runs.plan(DISPATCH_SPEC, {}, "r1")
    entry = runs.engine(runs.load("r1")).ready()[0]
    call = {"kind": "usage", "dispatchId": entry["dispatchId"], "usage": {"usd": 0.125, "tokens": 7}}
    seen = replay_usage(ws.root, tmp_path / "go", call)
    assert seen == {"debited": 1, "duplicate": PROCESSES * THREADS - 1}
    state = runs.load("r1").state
    assert state["flowSpent"] == {"dispatches": 1, "usd": 0.125, "tokens": 7}
    debits = [ev for ev in runs.audit("r1")["events"] if ev["type"] == "usage_debit"]
    assert [d["detail"]["seq"] for d in debits] == [1]
    assert len(_usage_commits(ws.root)) == 1


def test_a_result_with_usage_racing_usage_reports_for_its_dispatch_debits_once(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    runs.plan(DISPATCH_SPEC, {}, "r1")
    entry = runs.engine(runs.load("r1")).ready()[0]
    usage = {"usd": 0.25}
    report = {"kind": "usage", "dispatchId": entry["dispatchId"], "usage": usage}
    done = {
        "kind": "done",
        "step": "a",
        "token": entry["dispatchToken"],
        "result": {"output": {"n": 1}, "usage": usage},
    }
    seen = replay_usage(ws.root, tmp_path / "go", report, done)
    # one result is accepted, every other copy is refused; one debit, whoever won it
    dones = PROCESSES * (THREADS // 2)  # threads alternate: report, done, report, ...
    assert seen["done"] == 1
    assert seen["refused:step_not_ready"] == dones - 1
    assert seen["debited"] + seen["duplicate"] == PROCESSES * THREADS - dones and seen["debited"] <= 1
    state = runs.load("r1").state
    assert state["flowSpent"]["usd"] == 0.25
    debits = [ev for ev in runs.audit("r1")["events"] if ev["type"] == "usage_debit"]
    assert len(debits) == 1 and debits[0]["detail"]["dispatchId"] == entry["dispatchId"]
