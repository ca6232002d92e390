"""The post-commit hook: it never changes a commit, coalesces bursts, survives kill -9."""

from __future__ import annotations

import fcntl
import json
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
    runner.post_commit(ws)  # on: marks, and starts a detached runner
    wait_idle(ws)


def test_a_burst_of_commits_coalesces_into_one_run(ws: Path) -> None:
    side = store.sidecar(ws)
    side.mkdir(parents=True, exist_ok=True)
    with open(side / "run.lock", "ab") as held:  # a runner is busy: each hook only marks
        fcntl.flock(held, fcntl.LOCK_EX)
        for n in range(12):
            commit_at(ws, T0, f"burst {n}", {f"f{n}.txt": str(n)})
            runner.post_commit(ws)
        assert runner.drain(ws) == 0  # one run at a time: the lock is taken
    git(ws, "config", "vivary.heartbeat.debounceMs", "0")
    assert runner.drain(ws) == 1
    [line] = (side / "runs.log").read_text().splitlines()
    assert "commits=13" in line  # the first heartbeat reads the whole history once


def test_post_commit_script_backgrounds_python(ws: Path) -> None:
    """The installed script backgrounds Python: git waits only for sh."""
    install(ws)
    script = (ws / ".git" / "hooks" / "post-commit").read_text()
    assert script.rstrip().endswith("&\nexit 0")
    assert "</dev/null >/dev/null 2>&1 &" in script


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
