"""Run storage: one commit per transition on refs/vivary/runs/<id>/head, moved by
compare-and-swap; crashes leave a consistent state; racing writers cannot both win;
history is the audit trail; runs travel with git push/fetch."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from strato.runs.service import Runs
from strato.runs.store import RunStore, head_ref
from tests.support.flows import make_workspace
from tests.support.repos import git
from tropo.git.refs import RefRaceError

CHAIN = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s4.output}", contract: R}
    steps:
""" + "".join(
    f"      - id: s{i}\n        do: step {i}\n        out: R\n" + (f"        after: [s{i - 1}]\n" if i else "")
    for i in range(5)
)
DRIVER = Path(__file__).parent / "crash_driver.py"


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[3])
    return {**os.environ, "PYTHONPATH": root}


def test_each_transition_is_one_commit_with_the_event_as_message(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    run_id = runs.plan(CHAIN, {}).snap.run_id
    for _ in range(5):
        entry = runs.engine(runs.load(run_id)).ready()[0]
        runs.done(run_id, entry["id"], entry["dispatchToken"], {"output": {"n": 1}})
    history = list(runs.store.history(run_id))
    assert [t["op"] for _, t in history] == ["plan"] + ["done"] * 5
    assert history[-1][1]["events"][-1]["type"] == "completed"
    repo = pygit2.Repository(str(ws.root))
    head = repo.references[head_ref(run_id)].peel(pygit2.Commit)
    assert sorted(e.name for e in head.tree) == ["spec.yaml", "state"]
    subject, body = head.message.split("\n\n", 1)
    assert subject == "run: done s4" and json.loads(body)["op"] == "done"
    # the work tree, the index and HEAD are untouched
    assert git(ws.root, "status", "--porcelain") == ""
    assert git(ws.root, "rev-list", "--count", "HEAD").strip() == "1"


def test_a_transition_from_a_stale_head_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    snap = runs.plan(CHAIN, {}).snap
    store = RunStore(runs.repo)
    store.transition(snap, {**snap.state, "status": "cancelled"}, {"op": "x", "events": []})
    with pytest.raises(RefRaceError) as info:
        store.transition(snap, snap.state, {"op": "y", "events": []})
    assert info.value.actual != snap.head


@pytest.mark.slow
def test_kill_9_at_random_points_leaves_a_consistent_resumable_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    spec_file = tmp_path / "chain.yaml"
    spec_file.write_text(CHAIN)
    rng = random.Random(7)
    for _ in range(8):
        proc = subprocess.Popen(
            [sys.executable, str(DRIVER), "loop", str(ws.root), str(spec_file)], env=_env(),
            stdout=subprocess.PIPE, text=True,
        )
        assert proc.stdout is not None
        for _ in range(rng.randrange(1, 12)):  # let it get going, then kill it mid-flight
            assert proc.stdout.readline() == "transition\n"
        time.sleep(rng.random() * 0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    runs = Runs(ws.root)
    run_ids = runs.store.run_ids()
    assert len(run_ids) >= 8
    for run_id in run_ids:
        snap = runs.load(run_id)  # every head parses and matches its history
        history = list(runs.store.history(run_id))
        assert history[0][1]["op"] == "plan"
        assert history[-1][0] == snap.head
        done = [s for s in snap.state["scope"]["steps"].values() if s["status"] == "succeeded"]
        assert len(done) == sum(1 for _, t in history if t["op"] == "done")
        while snap.state["status"] == "running":  # and every run can be finished
            entry = runs.engine(snap).ready()[0]
            snap = runs.done(run_id, entry["id"], entry["dispatchToken"], {"output": {"n": 1}}).snap
        assert snap.state["status"] == "completed"


def test_two_processes_racing_done_exactly_one_wins(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    for round_ in range(3):
        run_id = runs.plan(CHAIN, {}).snap.run_id
        token = runs.engine(runs.load(run_id)).ready()[0]["dispatchToken"]
        go = tmp_path / f"go{round_}"
        procs = [
            subprocess.Popen(
                [sys.executable, str(DRIVER), "race", str(ws.root), run_id, "s0", token, str(go)],
                env=_env(), stdout=subprocess.PIPE, text=True,
            )
            for _ in range(2)
        ]
        for p in procs:  # both loaded and spinning on the start line, then go
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        go.touch()
        results = [json.loads(p.communicate()[0]) for p in procs]
        assert sorted(r["won"] for r in results) == [False, True]
        assert [r["code"] for r in results if not r["won"]] == ["step_not_ready"]
        history = list(runs.store.history(run_id))
        assert [t["op"] for _, t in history] == ["plan", "done"]


def test_runs_travel_with_push_and_fetch(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    run_id = ws.runs().plan(CHAIN, {}).snap.run_id
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(ws.root, "push", "-q", str(remote), "refs/vivary/*:refs/vivary/*")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    git(other, "fetch", "-q", "origin", "refs/vivary/*:refs/vivary/*")
    runs = Runs(other)
    assert runs.store.run_ids() == [run_id]
    assert len(runs.audit(run_id)["events"]) == 2


def test_a_lock_left_by_a_killed_writer_does_not_wedge_the_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    snap = runs.plan(CHAIN, {}).snap
    lock = Path(runs.store.repo.path) / f"{head_ref(snap.run_id)}.lock"
    lock.write_text(snap.head + "\n")  # kill -9 between taking the ref lock and renaming it
    old = time.time() - 60
    os.utime(lock, (old, old))
    entry = runs.engine(snap).ready()[0]
    after = runs.done(snap.run_id, entry["id"], entry["dispatchToken"], {"output": {"n": 1}}).snap
    assert after.head != snap.head and not lock.exists()
    assert list(runs.store.history(snap.run_id))[-1][0] == after.head
