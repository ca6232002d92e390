"""`strato worker`: clones of one bare remote carry one run, each worker a real process;
every step runs exactly as often as a local run runs it, whichever machine took it."""

from __future__ import annotations

from pathlib import Path

from tests.support.repos import git
from tests.support.runs import strato
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


def test_two_workers_carry_a_run_planned_on_a_third_clone(tmp_path: Path) -> None:
    bare, (planner, one, two) = machines(tmp_path, 3)
    code, _, err = strato(planner, "flow", "plan", str(planner / "specs/steps.yaml"), "--input", "tag=t1", "--id", "r1")
    assert code == 0, err
    share(planner, "r1")
    procs = [worker(root, "--run", "r1", "--interval", "0.05") for root in (one, two)]
    reports = [finished(p) for p in procs]
    for code, report, err in reports:
        assert code == 0, err
        assert report is not None and report["runs"] == {"r1": "completed"}
    state = remote_run(bare, "r1")
    assert state["status"] == "completed" and state["output"] == {"text": "finish done"}
    # each step ran as locally: fix is wrong once and right the second time, nothing twice
    assert all_calls(tmp_path, "t1") == ["draft", "finish", "fix", "fix"]
    assert sum(r[1]["done"] for r in reports if r[1]) == 4
    done = [t for t in transitions(bare, "r1") if t["op"] == "done"]
    assert [t["stepId"] for t in done] == ["draft", "fix", "fix", "finish"]
    assert all(t["worker"]["machine"] and t["worker"]["claim"].startswith(t["stepId"] + ".g") for t in done)
    # one claim per hand-out, each finished with the run commit that recorded it
    assert sorted(ref.rsplit("/", 1)[1] for ref in claim_refs(bare, "r1")) == [
        "draft.g1", "finish.g1", "fix.g1", "fix.g2"]
    for ref in claim_refs(bare, "r1"):
        lease = git(bare, "show", f"{ref}:lease.json")
        assert '"state": "done"' in lease
    # the planner's clone reads the shared run as a local one
    git(planner, "fetch", "-q", "origin", "+refs/vivary/runs/*:refs/vivary/runs/*")
    code, audit, err = strato(planner, "flow", "audit", "r1")
    assert code == 0, err
    assert audit["status"] == "completed"
    assert [row["stepId"] for row in audit["attempts"]] == ["draft", "fix", "fix", "finish"]


def test_a_worker_with_all_carries_every_run_the_remote_holds(tmp_path: Path) -> None:
    bare, (planner, one) = machines(tmp_path, 2)
    for run_id in ("a1", "a2"):
        code, _, err = strato(planner, "flow", "plan", str(planner / "specs/steps.yaml"), "--input", f"tag={run_id}",
                              "--id", run_id)
        assert code == 0, err
        share(planner, run_id)
    code, report, err = finished(worker(one, "--all", "--interval", "0.05", "--max-parallel", "2"))
    assert code == 0, err
    assert report is not None and report["runs"] == {"a1": "completed", "a2": "completed"}
    assert remote_run(bare, "a1")["status"] == remote_run(bare, "a2")["status"] == "completed"
