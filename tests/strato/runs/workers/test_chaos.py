"""Chaos: ten workers on ten clones carry one fanout while a random worker is killed with
SIGKILL every 2 seconds (and started again), the remote delays every push by a random
moment (a pre-receive hook), and once every worker is stopped at the same time and all
are started again. Whatever the seed, the run completes with every item exactly once in
its output, no dispatch debited twice, and `strato flow audit` agreeing with the run."""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.repos import git, write_files
from tests.support.runs import fanout_spec, strato, wait_for
from tests.support.workers import machines, remote_run, share, transitions, worker

ITEMS = 24
WORKERS = 10
KILL_EVERY_S = 2.0
MAX_KILLS = 12  # the chaos is bounded: after these, the workers are left to finish


def _delaying(bare: Path, seed: int) -> None:
    """Every push waits a random 0-150 ms on the remote before it is taken."""
    hook = bare / "hooks" / "pre-receive"
    pause = f"$(printf '0.%03d' $(( ($$ * {seed % 97 + 1}) % 150 )))"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {pause}\nexit 0\n")
    hook.chmod(0o755)


def _start(root: Path) -> subprocess.Popen[str]:
    return worker(root, "--run", "r1", "--interval", "0.05", "--lease-ttl", "1", "--max-parallel", "2")


def _reap(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.communicate()


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(3))
def test_ten_workers_killed_at_random_carry_a_fanout_to_the_end_exactly_once(tmp_path: Path, round_: int) -> None:
    seed = int(os.environ.get("WORKER_CHAOS_SEED") or random.randrange(10**6))  # replay one with it
    print(f"round {round_}: seed {seed}")
    rng = random.Random(seed)
    bare, (planner, *clones) = machines(tmp_path, WORKERS + 1)
    _delaying(bare, seed)
    items = [f"x{i}" for i in range(ITEMS)]
    write_files(planner, {"fan.yaml": fanout_spec("slow").replace("concurrency: 2", "concurrency: 6")})
    code, _, err = strato(planner, "flow", "plan", str(planner / "fan.yaml"), "--input", "tag=ch",
                          "--input", f"items={json.dumps(items)}", "--id", "r1")
    assert code == 0, err
    share(planner, "r1")
    procs = [_start(root) for root in clones]
    dead: list[subprocess.Popen[str]] = []
    try:
        for kill in range(MAX_KILLS):
            time.sleep(KILL_EVERY_S)
            if remote_run(bare, "r1")["status"] != "running":
                break
            if kill == MAX_KILLS // 2:  # every worker stopped at once, then all started again
                for proc in procs:
                    proc.terminate()
                dead += procs
                procs = [_start(root) for root in clones]
                continue
            victim = rng.randrange(WORKERS)
            procs[victim].kill()
            dead.append(procs[victim])
            procs[victim] = _start(clones[victim])
        # the bound only keeps a broken run from hanging the suite: ten workers on a loaded
        # 2-core machine take minutes
        wait_for(lambda: remote_run(bare, "r1")["status"] != "running", "the run ends", bound_s=1200)
    finally:
        _reap(procs + dead)
    state = remote_run(bare, "r1")
    assert state["status"] == "completed", state
    history = transitions(bare, "r1")
    recorded = Counter(t["item"] for t in history if t["op"] == "fanout_item")
    assert recorded == Counter(range(ITEMS))  # every item recorded exactly once: none lost, none twice
    fan = state["scope"]["steps"]["fan"]
    assert [it["status"] for it in fan["fanout"]["items"]] == ["succeeded"] * ITEMS
    assert [it["output"] for it in fan["fanout"]["items"]] == [{"text": "right"}] * ITEMS
    debits = Counter(ev["detail"]["dispatchId"] for t in history for ev in t.get("events", [])
                     if ev["type"] == "usage_debit")
    assert set(debits.values()) == {1}  # no dispatch debited twice
    git(planner, "fetch", "-q", "origin", "+refs/vivary/runs/*:refs/vivary/runs/*")
    code, audit, err = strato(planner, "flow", "audit", "r1")
    assert code == 0, err
    assert audit["status"] == "completed" and audit["head"] == git(bare, "rev-parse", "refs/vivary/runs/r1/head").strip()
    assert sum(ev["type"] == "fanout_item_done" for ev in audit["events"]) == ITEMS
    assert sum(ev["type"] == "usage_debit" for ev in audit["events"]) == sum(debits.values())
