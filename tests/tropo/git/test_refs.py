"""Refs against git itself: compare-and-swap with one winner, a git lock left by a
writer killed mid-update cleared by the next cooperating writer (a live one waited
for, never broken), and the refs under a prefix."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pygit2
import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.refs import RefRaceError, cas_ref, read_ref, ref_writer


def _commit(root: Path) -> str:
    write_files(root, {"a.md": "# A\n"})
    return commit_all(root)


def test_cas_create_update_delete(repo_dir: Path) -> None:
    head = _commit(repo_dir)
    repo = gitrepo.require(repo_dir)
    gitrefs.cas_ref(repo, "refs/vivary/t", head, None, "create")
    assert git(repo_dir, "rev-parse", "refs/vivary/t").strip() == head
    with pytest.raises(gitrefs.RefRaceError) as info:
        gitrefs.cas_ref(repo, "refs/vivary/t", head, None, "create again")
    assert info.value.actual == head
    gitrefs.cas_ref(repo, "refs/vivary/t", None, head, "delete")
    assert gitrefs.read_ref(repo, "refs/vivary/t") is None


def _racer(args: tuple[str, str, int]) -> bool:
    root, head, _ = args
    repo = pygit2.Repository(root)
    try:
        gitrefs.cas_ref(repo, "refs/vivary/race", head, None, "race")
    except gitrefs.RefRaceError:
        return False
    return True


def test_cas_race_has_one_winner(repo_dir: Path) -> None:
    head = _commit(repo_dir)
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        wins = pool.map(_racer, [(str(repo_dir), head, i) for i in range(16)])
    assert wins.count(True) == 1



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
        from tropo.git.refs import ref_writer
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



def test_ref_names_lists_only_the_prefix_sorted(repo_dir: Path) -> None:
    _commit(repo_dir)
    for name in ("refs/vivary/runs/b/head", "refs/vivary/runs/a/head", "refs/vivary/other"):
        git(repo_dir, "update-ref", name, "HEAD")
    assert gitrefs.ref_names(gitrepo.require(repo_dir), "refs/vivary/runs/") == [
        "refs/vivary/runs/a/head",
        "refs/vivary/runs/b/head",
    ]


def test_create_ref_is_a_mutex(repo_dir: Path) -> None:
    head = _commit(repo_dir)
    repo = gitrepo.require(repo_dir)
    assert gitrefs.create_ref(repo, "refs/heads/claim/x", head, "first")
    assert not gitrefs.create_ref(repo, "refs/heads/claim/x", head, "second")
    assert gitrefs.read_ref(repo, "refs/heads/claim/x") == head


def test_branches_tips_and_ancestry_agree_with_git(repo_dir: Path) -> None:
    base = _commit(repo_dir)
    git(repo_dir, "branch", "claim/merged")
    write_files(repo_dir, {"b.md": "# B\n"})
    git(repo_dir, "checkout", "-q", "-b", "claim/ahead")
    ahead = commit_all(repo_dir)
    git(repo_dir, "update-ref", "refs/vivary/blob", git(repo_dir, "rev-parse", "HEAD:b.md").strip())
    repo = gitrepo.require(repo_dir)
    tips = gitrefs.branches(repo, "claim/")
    assert [(t.name, t.oid) for t in tips] == [("claim/ahead", ahead), ("claim/merged", base)]
    assert tips[0].time == int(git(repo_dir, "log", "-1", "--format=%ct", ahead))
    assert "refs/vivary/blob" not in gitrefs.ref_tips(repo, "refs/vivary/")  # a commit's tip only
    assert gitrefs.is_ancestor(repo, base, ahead) and gitrefs.is_ancestor(repo, ahead, ahead)
    assert not gitrefs.is_ancestor(repo, ahead, base)
    assert gitrefs.merge_base(repo, base, ahead) == base
