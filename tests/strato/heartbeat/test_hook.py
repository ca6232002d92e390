"""The post-commit hook: it never changes a commit, coalesces bursts, survives kill -9."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from strato.heartbeat import runner
from strato.proposals import store
from tests.support import console
from tests.support.heartbeat import T0, commit, commit_at, install
from tests.support.repos import git


def wait_idle(root: Path) -> None:
    """Until the detached runner is done (a failsafe against hanging, not a speed limit)."""
    side = store.sidecar(root)
    for _ in range(1200):
        if (side / "runs.log").exists() and not (side / "pending").exists() \
                and not (side / "pending.taken").exists():
            with open(side / "run.lock", "ab") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)  # the runner has let go
            return
        time.sleep(0.1)
    raise AssertionError("the detached heartbeat never finished")


def test_hook_never_changes_a_commit(ws: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(ws, twin)
    install(ws)
    assert commit(ws, "a.txt") == commit(twin, "a.txt")
    wait_idle(ws)
    assert git(ws, "status", "--porcelain") == ""
    assert list((ws / "heartbeat-reports").glob("*-heartbeat.md"))
    # a heartbeat that cannot even start (its sidecar is a file) still fails nothing
    shutil.rmtree(store.sidecar(ws))
    store.sidecar(ws).write_text("in the way")
    assert commit(ws, "b.txt") == commit(twin, "b.txt")
    assert git(ws, "status", "--porcelain") == ""


def test_hook_off_per_repository_per_user_and_by_environment(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pending = store.sidecar(ws) / "pending"
    git(ws, "config", "vivary.heartbeat", "false")
    runner.post_commit(ws)
    assert not pending.exists()
    git(ws, "config", "--unset", "vivary.heartbeat")
    git(ws, "config", "--global", "vivary.heartbeat", "off")
    runner.post_commit(ws)
    assert not pending.exists()
    git(ws, "config", "--global", "--unset", "vivary.heartbeat")
    monkeypatch.setenv("VIVARY_HEARTBEAT", "0")
    runner.post_commit(ws)
    assert not pending.exists()
    monkeypatch.delenv("VIVARY_HEARTBEAT")
    git(ws, "config", "vivary.heartbeat.debounceMs", "0")
    runner.post_commit(ws)  # on: marks, and runs (here, in process)
    wait_idle(ws)


def _mark_pids(side: Path) -> list[int]:
    return [int(x) for x in (side / "pending").read_text().split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pid: int) -> None:
    """Until ``pid`` (not our child: init reaps it) has gone (a failsafe bound only)."""
    for _ in range(1200):
        if not _alive(pid):
            return
        time.sleep(0.05)
    raise AssertionError(f"{pid} never ended")


def test_a_burst_of_commits_starts_one_runner_and_coalesces_into_one_run(ws: Path) -> None:
    """The real hook, while a runner is busy: the first commit starts one background
    runner (it waits for the lock), the other eleven only see it alive in the mark."""
    install(ws)
    git(ws, "config", "vivary.heartbeat.debounceMs", "0")
    side = store.sidecar(ws)
    side.mkdir(parents=True, exist_ok=True)
    with open(side / "run.lock", "ab") as held:  # a runner is busy
        fcntl.flock(held, fcntl.LOCK_EX)
        for n in range(12):
            assert commit(ws, f"f{n}.txt")[0] == 0
        [waiting] = _mark_pids(side)  # one start for twelve commits
        assert _alive(waiting)
        assert runner.drain(ws) == 0  # one run at a time: the lock is taken
    wait_idle(ws)
    [line] = (side / "runs.log").read_text().splitlines()
    assert "commits=13" in line  # the first heartbeat reads the whole history once
    assert store.load_state(side)["head"] == git(ws, "rev-parse", "HEAD").strip()


def test_a_runner_killed_before_its_run_is_replaced_by_the_next_commit(ws: Path) -> None:
    install(ws)
    git(ws, "config", "vivary.heartbeat.debounceMs", "0")
    side = store.sidecar(ws)
    side.mkdir(parents=True, exist_ok=True)
    with open(side / "run.lock", "ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        commit(ws, "a.txt")
        [started] = _mark_pids(side)
        for child in Path(f"/proc/{started}/task/{started}/children").read_text().split():
            os.kill(int(child), signal.SIGKILL)  # the interpreter, waiting for the lock
        os.kill(started, signal.SIGKILL)
        _gone(started)
        commit(ws, "b.txt")  # its mark names a dead runner: this commit starts another
        assert _mark_pids(side)[-1] != started and len(_mark_pids(side)) == 2
    wait_idle(ws)
    assert store.load_state(side)["head"] == git(ws, "rev-parse", "HEAD").strip()


def test_a_planted_mark_is_never_written_through(ws: Path, tmp_path: Path) -> None:
    """Another agent with write access to .git/vivary links `pending` to a file of the
    user's: the hook neither appends to it nor follows the link; the runner replaces
    the link with a mark of its own."""
    install(ws)
    git(ws, "config", "vivary.heartbeat.debounceMs", "0")
    side = store.sidecar(ws)
    side.mkdir(parents=True, exist_ok=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (side / "pending").symlink_to(victim)
    code, head = commit(ws, "a.txt")
    assert code == 0
    wait_idle(ws)
    assert victim.read_text() == "precious\n"
    assert store.load_state(side)["head"] == head


def test_the_hook_starts_nothing_when_the_heartbeat_is_off(ws: Path) -> None:
    install(ws)
    side = store.sidecar(ws)
    side.mkdir(parents=True, exist_ok=True)
    git(ws, "config", "vivary.heartbeat", "false")
    assert commit(ws, "a.txt")[0] == 0
    assert not (side / "pending").exists()
    git(ws, "config", "--unset", "vivary.heartbeat")
    proc = subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=ws, check=False,
                          env={**os.environ, "VIVARY_HEARTBEAT": "off"})
    assert proc.returncode == 0
    assert not (side / "pending").exists()


def _proposals(root: Path) -> dict[str, str]:
    return {r["id"]: r["revision"] for r in store.all_records(store.sidecar(root))}


@pytest.mark.slow
def test_kill_9_mid_run_then_rerun_proposes_nothing_twice(ws: Path, tmp_path: Path) -> None:
    for n in range(6):
        commit_at(ws, T0, f"fix(core): bug {n}", {f"changes/lost{n}.md": f"---\nstatus: done\n---\n# L{n}\n",
                                                   "core.py": str(n)})
    reference = tmp_path / "reference"
    shutil.copytree(ws, reference)
    cli = [sys.executable, "-m", "strato.cli", "heartbeat", "run", "--json"]

    def heartbeat(root: Path) -> dict[str, Any]:
        """A whole run, in process: only the run the test kills needs to be a process."""
        proc = console.run("strato", "heartbeat", "run", "--json", cwd=root)
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout))

    heartbeat(reference)
    expected = _proposals(reference)
    assert len(expected) == 7
    for delay in (0.0, 0.15, 0.3, 0.45, 0.6, 0.9):
        victim = tmp_path / f"victim{delay}"
        shutil.copytree(ws, victim)
        proc = subprocess.Popen(cli, cwd=victim, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = _proposals(victim)
        rerun = heartbeat(victim)
        assert not set(rerun["new"]) & set(before), delay
        assert _proposals(victim) == expected, delay
        again = heartbeat(victim)
        assert again["new"] == [] and again["commits"] == 0


def test_a_plain_hooks_install_registers_the_heartbeat(ws: Path) -> None:
    proc = console.run("vivary", "hooks", "install", "--json", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hooks"]["post-commit"] == "written"
    code, head = commit(ws, "a.txt")
    assert code == 0
    wait_idle(ws)
    assert store.load_state(store.sidecar(ws))["head"] == head  # the heartbeat ran after it
