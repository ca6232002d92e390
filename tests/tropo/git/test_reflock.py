"""A git ref lock left by a writer killed mid-update is cleared by the next cooperating
writer; a live cooperating writer is waited for, never broken."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pygit2
import pytest

from tropo.git.reflock import ref_writer
from tropo.git.repo import RefRaceError, cas_ref, read_ref

NAME = "refs/vivary/runs/r/head"


def _repo(repo_dir: Path) -> pygit2.Repository:
    return pygit2.Repository(str(repo_dir))


def _head(repo: pygit2.Repository) -> str:
    return str(repo.revparse_single("HEAD").id)


def _mutex(repo: pygit2.Repository) -> Path:
    """The flock file ref_writer takes for NAME (found as the one file of reflocks/)."""
    (mutex,) = (Path(repo.path) / "vivary" / "reflocks").iterdir()
    return mutex


def _wait_until_blocked_on(path: Path, thread: threading.Thread) -> None:
    """Poll /proc/locks until some process waits ("->") for a flock on ``path``; a
    generous bound only turns a hang into a loud failure."""
    inode = f":{path.stat().st_ino} "
    for _ in range(6000):
        if any("-> FLOCK" in line and inode in line for line in Path("/proc/locks").read_text().splitlines()):
            return
        assert thread.is_alive(), "the second writer finished while the holder held the lock"
        thread.join(0.01)
    raise AssertionError(f"no writer ever queued on the lock {path}")


def test_a_stale_git_lock_blocks_plain_cas_but_not_a_cooperating_writer(repo_dir: Path) -> None:
    subprocess.run(["git", "-C", str(repo_dir), "commit", "-q", "--allow-empty", "-m", "c"], check=True)
    repo = _repo(repo_dir)
    # what a writer killed between taking git's lock and renaming it leaves behind
    lock = repo_dir / ".git" / f"{NAME}.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    with pytest.raises(RefRaceError):
        cas_ref(repo, NAME, _head(repo), None, "blocked")
    with ref_writer(repo, NAME):
        cas_ref(repo, NAME, _head(repo), None, "recovered")
    assert read_ref(repo, NAME) == _head(repo) and not lock.exists()


def test_a_live_cooperating_writer_is_waited_for(repo_dir: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "-C", str(repo_dir), "commit", "-q", "--allow-empty", "-m", "c"], check=True)
    holder = tmp_path / "holder.py"
    holder.write_text(textwrap.dedent(f"""
        import sys, pygit2
        from tropo.git.reflock import ref_writer
        repo = pygit2.Repository({str(repo_dir)!r})
        with ref_writer(repo, {NAME!r}):
            print("held", flush=True)
            sys.stdin.readline()
            print("released", flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(holder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline() == "held\n"
    repo = _repo(repo_dir)
    entered = threading.Event()

    def second_writer() -> None:
        with ref_writer(_repo(repo_dir), NAME):
            entered.set()

    thread = threading.Thread(target=second_writer)
    thread.start()
    # while the holder lives, the second writer is queued on the kernel's lock (the
    # kernel lists it as a blocked waiter), not merely slow to arrive
    _wait_until_blocked_on(_mutex(repo), thread)
    assert not entered.is_set()
    assert read_ref(repo, NAME) is None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "released\n"
    entered.wait()
    thread.join()
    proc.wait()
