"""Real processes racing on one notes ref: one winner per state, no lost appends, and a
kill -9 in the middle of appending leaves the last good ledger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from strato.guard import engine, store
from strato.guard.verify import verify_repository
from tests.support.guard import Workspace, approve_policy
from tests.support.repos import git

STRATO = str(Path(sys.executable).parent / "strato")


def cli(ws: Workspace, op: str, req: dict[str, object]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [STRATO, "guard", op, "--root", str(ws.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(req))
    proc.stdin.close()
    return proc


def answer(proc: subprocess.Popen[str]) -> dict[str, object]:
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    proc.stderr.read()
    proc.wait()
    return dict(json.loads(out))


def test_two_processes_one_state_one_winner(ws: Workspace) -> None:
    barrier = ws.tmp / "barrier"
    barrier.mkdir()
    # each evaluation waits until both processes are evaluating: both passed the state
    # check before either writes, so the race is certain, not a matter of timing
    wait = f"touch {barrier}/$$; while [ $(ls {barrier} | wc -l) -lt 2 ]; do sleep 0.02; done"
    pred = [{"id": "both", "statement": f'command_exit_zero(["sh", "-c", "{wait}"])'}]
    ws.commit({".vivary/guard/config.toml": "allow_commands = true\n"})
    engine.register(
        ws.repo,
        {
            "resource_id": "r",
            "graph": {"draft": ["review", "parked"]},
            "initial": "draft",
            "edge_predicates": {"draft->review": pred, "draft->parked": pred},
        },
    )
    approve_policy(ws, "r")
    a = cli(ws, "transition", {"resource_id": "r", "from_state": "draft", "to_state": "review"})
    b = cli(ws, "transition", {"resource_id": "r", "from_state": "draft", "to_state": "parked"})
    results = [answer(a), answer(b)]
    statuses = sorted(str(r["status"]) for r in results)
    assert statuses == ["applied", "error"], results
    loser = next(r for r in results if r["status"] == "error")
    assert loser["error_type"] == "stale_from_state" and "state moved" in str(loser["message"])
    winner = next(r for r in results if r["status"] == "applied")
    hist = engine.history(ws.repo, {"resource_id": "r"})
    assert hist["current_state"] == winner["current_state"]
    assert len(hist["ledger"]) == 2
    assert verify_repository(ws.repo).ok


WORKER = """
import sys
from strato.guard import engine
from tropo.git import repo
r = repo.require(sys.argv[1])
rid = sys.argv[2]
engine.register(r, {"resource_id": rid, "graph": {"a": ["b"], "b": ["a"]}, "initial": "a"})
state = "a"
for _ in range(int(sys.argv[3])):
    nxt = "b" if state == "a" else "a"
    out = engine.transition(r, {"resource_id": rid, "from_state": state, "to_state": nxt})
    assert out["status"] == "applied", out
    state = nxt
    print(state, flush=True)
"""


def worker(ws: Workspace, rid: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(ws.root), rid, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_parallel_writers_on_other_resources_lose_nothing(ws: Workspace) -> None:
    procs = [worker(ws, f"res-{i}", 8) for i in range(4)]
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    report = verify_repository(ws.repo)
    assert report.ok and report.resources == 4 and report.entries == 4 * 9
    commits = git(ws.root, "rev-list", "--count", store.REF).strip()
    assert commits == str(4 * 9)  # one notes commit per entry, none overwritten


@pytest.mark.slow
def test_kill_9_during_appends_leaves_a_sound_ledger(ws: Workspace) -> None:
    proc = worker(ws, "victim", 10_000)
    assert proc.stdout is not None
    for _ in range(15):  # let it append a while, then kill it wherever it is
        assert proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    report = verify_repository(ws.repo)
    assert report.ok, report.breaks
    hist = engine.history(ws.repo, {"resource_id": "victim"})
    assert len(hist["ledger"]) >= 16
    lock = Path(ws.repo.path) / (store.REF + ".lock")
    lock.unlink(missing_ok=True)  # what the ledger_busy message tells a person to do
    state = str(hist["current_state"])
    nxt = "b" if state == "a" else "a"
    out = engine.transition(
        ws.repo, {"resource_id": "victim", "from_state": state, "to_state": nxt}
    )
    assert out["status"] == "applied"
    assert verify_repository(ws.repo).ok


def test_stale_lock_is_named_in_the_error(ws: Workspace) -> None:
    engine.register(ws.repo, {"resource_id": "x", "graph": {"a": ["b"]}, "initial": "a"})
    lock = Path(ws.repo.path) / (store.REF + ".lock")
    lock.write_text("")
    proc = cli(ws, "transition", {"resource_id": "x", "from_state": "a", "to_state": "b"})
    out = answer(proc)
    assert out["error_type"] == "ledger_busy" and str(lock) in str(out["message"])
    assert proc.returncode == 1
    lock.unlink()
    assert engine.history(ws.repo, {"resource_id": "x"})["current_state"] == "a"
