"""Workers that die, runs cancelled or rewritten under them: a worker killed with SIGKILL
at any point loses no step and records none twice (another worker takes its claim over
once it stops being renewed, and says so); a cancel pushed from any clone stops every
worker's agent; a force-pushed head stops the workers with `run_rewritten`."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.repos import git, write_files
from tests.support.runs import STEPS_SPEC, calls, newer_format, one_step_spec, pids, strato, wait_for
from tests.support.workers import claim_refs, finished, machines, remote_run, share, transitions, worker


def _plan(root: Path, spec: str, run_id: str, tag: str) -> None:
    write_files(root, {f"{run_id}.yaml": spec})
    code, _, err = strato(root, "flow", "plan", str(root / f"{run_id}.yaml"), "--input", f"tag={tag}", "--id", run_id)
    assert code == 0, err
    share(root, run_id)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie the test's own process has not reaped
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    return False


def _agent_pids(tmp_path: Path, tag: str) -> list[int]:
    log = tmp_path / f"calls-{tag}.log"
    return [int(line.split()[1]) for line in log.read_text().splitlines()] if log.exists() else []


def _debits(bare: Path, run_id: str) -> Counter[str]:
    return Counter(ev["detail"]["dispatchId"] for t in transitions(bare, run_id) for ev in t.get("events", [])
                   if ev["type"] == "usage_debit")


def test_a_worker_killed_during_its_agent_is_taken_over_and_the_takeover_recorded(tmp_path: Path) -> None:
    bare, (planner, one, two) = machines(tmp_path, 3)
    _plan(planner, one_step_spec("slow"), "r1", "k1")
    first = worker(one, "--run", "r1", "--lease-ttl", "1", "--interval", "0.05", env={"SLOW_S": "30"})
    wait_for(lambda: calls(tmp_path, "k1"), "the first worker's agent starts")
    held = git(bare, "show", "refs/vivary/runs/r1/claims/work.g1:lease.json")
    first.kill()
    first.wait()
    code, report, err = finished(worker(two, "--run", "r1", "--lease-ttl", "1", "--interval", "0.05"))
    assert code == 0, err
    assert report is not None and report["takeovers"] == 1 and report["runs"] == {"r1": "completed"}
    assert calls(tmp_path, "k1") == ["work", "work"]  # run again, as the attempt history says
    [done] = [t for t in transitions(bare, "r1") if t["op"] == "done"]
    assert done["worker"]["takeover"]["from"]["worker"] == json.loads(held)["worker"]
    assert set(_debits(bare, "r1").values()) == {1}
    git(planner, "fetch", "-q", "origin", "+refs/vivary/runs/*:refs/vivary/runs/*")
    code, audit, err = strato(planner, "flow", "audit", "r1")
    assert code == 0, err
    assert [w["stepId"] for w in audit["workers"]] == ["work"] and "takeover" in audit["workers"][0]
    for pid in _agent_pids(tmp_path, "k1"):  # the dead worker's orphan agent
        _kill(pid)


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(3))
def test_a_worker_killed_at_a_random_moment_loses_and_doubles_nothing(tmp_path: Path, round_: int) -> None:
    seed = int(os.environ.get("WORKER_KILL_SEED") or random.randrange(10**6))  # replay one with it
    print(f"round {round_}: seed {seed}")
    rng = random.Random(seed)
    bare, (planner, one, two) = machines(tmp_path, 3)
    _plan(planner, STEPS_SPEC, "r1", "k2")
    first = worker(one, "--run", "r1", "--lease-ttl", "1", "--interval", "0.05", env={"SLOW_S": "0.3"})
    time.sleep(rng.uniform(0.2, 2.5))
    first.kill()
    first.wait()
    code, _, err = finished(worker(two, "--run", "r1", "--lease-ttl", "1", "--interval", "0.05"))
    assert code == 0, err
    state = remote_run(bare, "r1")
    assert state["status"] == "completed", state
    done = [t for t in transitions(bare, "r1") if t["op"] == "done"]
    claims = [t["worker"]["claim"] for t in done]
    assert len(claims) == len(set(claims))  # each hand-out's result recorded once
    # fix is wrong the first time any machine asks it: once the killed worker asked, its
    # taker's first answer is right, so fix ends after one or two hand-outs
    assert [t["stepId"] for t in done if t["stepId"] != "fix"] == ["draft", "finish"]
    assert set(_debits(bare, "r1").values()) == {1} and len(_debits(bare, "r1")) == len(done)
    for ref in claim_refs(bare, "r1"):
        assert json.loads(git(bare, "show", f"{ref}:lease.json"))["state"] == "done"
    for pid in _agent_pids(tmp_path, "k2"):
        _kill(pid)


def test_a_cancel_pushed_from_another_clone_stops_the_workers_agents(tmp_path: Path) -> None:
    bare, (planner, one, two) = machines(tmp_path, 3)
    _plan(planner, one_step_spec("hostile"), "r1", "c1")
    procs = [worker(root, "--run", "r1", "--interval", "0.05") for root in (one, two)]
    wait_for(lambda: len(pids(tmp_path / "m1", "c1") + pids(tmp_path / "m2", "c1")) == 4, "the agent forked")
    code, view, err = strato(planner, "flow", "cancel", "r1", "--remote", "origin", "--reason", "enough")
    assert code == 0, err
    assert view["status"] == "cancelled"
    for proc in procs:
        code, report, err = finished(proc)
        assert code == 0, err
        assert report is not None and report["runs"] == {"r1": "cancelled"}
    stopped = pids(tmp_path / "m1", "c1") + pids(tmp_path / "m2", "c1")
    assert not [pid for pid in stopped if _alive(pid)]  # the whole group, SIGTERM ignored or not
    assert remote_run(bare, "r1")["status"] == "cancelled"


def test_a_force_pushed_head_stops_the_worker_with_run_rewritten(tmp_path: Path) -> None:
    bare, (planner, one) = machines(tmp_path, 2)
    _plan(planner, STEPS_SPEC, "r1", "w1")
    proc = worker(one, "--run", "r1", "--interval", "0.05", env={"SLOW_S": "1"})
    wait_for(lambda: len([t for t in transitions(bare, "r1") if t["op"] == "done"]) >= 1, "a step is done")
    planned = git(bare, "rev-list", "--max-parents=0", "refs/vivary/runs/r1/head").strip()
    git(bare, "update-ref", "refs/vivary/runs/r1/head", planned)  # someone force-pushes it back
    code, report, err = finished(proc)
    assert code == 1 and report is not None
    assert report["error"]["code"] == "run_rewritten", report
    assert len(err.strip().splitlines()) >= 1 and "rewritten" in err.strip().splitlines()[-1]
    assert git(bare, "rev-parse", "refs/vivary/runs/r1/head").strip() == planned  # nothing pushed on it
    for pid in _agent_pids(tmp_path, "w1"):
        _kill(pid)


def test_a_run_this_version_cannot_read_is_left_alone_with_one_line(tmp_path: Path) -> None:
    """A newer version's run on the remote: the worker says so in one line, exits 1 with
    `run_unreadable` and pushes nothing on it."""
    bare, (planner, one) = machines(tmp_path, 2)
    _plan(planner, STEPS_SPEC, "r1", "u1")
    head = newer_format(bare, "refs/vivary/runs/r1/head")
    code, report, err = finished(worker(one, "--run", "r1", "--interval", "0.05"))
    assert code == 1 and report is not None and report["error"]["code"] == "run_unreadable", report
    assert "cannot read" in err.strip().splitlines()[-1]
    assert git(bare, "rev-parse", "refs/vivary/runs/r1/head").strip() == head
    assert not claim_refs(bare, "r1") and not calls(tmp_path, "u1")
