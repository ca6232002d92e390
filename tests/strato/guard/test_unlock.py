"""A writer killed with SIGKILL while it holds the notes-ref lock: appends refuse and
name the remedy, and `strato guard unlock` breaks the lock only when it is stale and
every ledger verifies."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from strato.guard import engine, lock, store
from strato.guard.errors import GuardError
from tests.support import console
from tests.support.guard import POLICY, Workspace, ledger_text, put_ledger
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

RID = "release:1.0"
MOVE = {"resource_id": RID, "from_state": "draft", "to_state": "review"}


def kill_holding_lock(ws: Workspace) -> Path:
    """Start a real git transaction on the notes ref, wait until it holds the lock, kill -9."""
    tip = gitrefs.read_ref(ws.repo, store.REF)
    proc = subprocess.Popen(
        ["git", "update-ref", "--stdin"],
        cwd=ws.root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"start\nupdate {store.REF} {tip} {tip}\nprepare\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "start: ok\n"
    assert proc.stdout.readline() == "prepare: ok\n"  # the lock is now held
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    path = lock.lock_path(ws.repo)
    assert path.exists()
    return path


def unlock_cli(ws: Workspace, *args: str) -> tuple[int, dict[str, object], str]:
    proc = console.run("strato", "guard", "unlock", "--root", ws.root, "--json", *args)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def age(path: Path, seconds: float) -> None:
    st = path.stat()
    os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


@pytest.fixture
def registered(ws: Workspace) -> Workspace:
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    return ws


def test_killed_writer_lock_is_refused_then_unlocked(registered: Workspace) -> None:
    ws = registered
    tip = gitrefs.read_ref(ws.repo, store.REF)
    path = kill_holding_lock(ws)
    with pytest.raises(GuardError) as info:
        engine.transition(ws.repo, MOVE)
    assert info.value.error_type == "ledger_busy"
    assert str(path) in info.value.message and "strato guard unlock" in info.value.message
    # a fresh lock may belong to a live writer: kept
    code, out, err = unlock_cli(ws)
    assert (code, out["status"]) == (1, "refused") and "writer may be alive" in err
    assert path.exists()
    age(path, lock.DEFAULT_MIN_AGE_S + 5)
    code, out, _ = unlock_cli(ws)
    assert (code, out["status"], out["tip"]) == (0, "unlocked", tip)
    assert not path.exists()
    assert gitrefs.read_ref(ws.repo, store.REF) == tip  # the last good commit, untouched
    assert engine.transition(ws.repo, MOVE)["status"] == "applied"
    log = (gitrepo.private_dir(ws.repo) / "guard" / "unlock.log").read_text().splitlines()
    assert [json.loads(line)["status"] for line in log] == ["refused", "unlocked"]
    code, out, _ = unlock_cli(ws)
    assert (code, out["status"]) == (0, "no_lock")


def test_unlock_refuses_over_a_ledger_that_does_not_verify(registered: Workspace) -> None:
    ws = registered
    engine.transition(ws.repo, MOVE)
    anchor = notes.anchor_id(store.anchor_content(RID))
    first = ledger_text(ws, anchor).splitlines()[0]
    put_ledger(ws, anchor, first + "\n")  # a dropped line: the history shows a deletion
    path = kill_holding_lock(ws)
    code, out, err = unlock_cli(ws, "--min-age", "0")
    assert code == 1 and out["status"] == "refused" and "does not verify" in err
    assert path.exists()


def test_unlock_usage_errors(registered: Workspace, tmp_path: Path) -> None:
    proc = console.run("strato", "guard", "unlock", "--min-age", "-1", "--root", registered.root)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    empty = tmp_path / "not-a-repo"
    empty.mkdir()
    proc = console.run("strato", "guard", "unlock", "--root", empty)
    assert proc.returncode == 2 and "not_a_repository" in proc.stderr
