from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import pygit2
import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import repo as gitrepo


def _commit(root: Path) -> str:
    write_files(root, {"a.md": "# A\n"})
    return commit_all(root)


def test_discover_outside_repo(tmp_path: Path) -> None:
    assert gitrepo.discover(tmp_path) is None
    with pytest.raises(gitrepo.NotARepository):
        gitrepo.require(tmp_path)


def test_discover_outside_repo_keeps_none_alive(tmp_path: Path) -> None:
    # pygit2.discover_repository returned None unreferenced: 10k misses aborted the process.
    before = sys.getrefcount(None)
    for _ in range(2000):
        assert gitrepo.discover(tmp_path) is None
    assert sys.getrefcount(None) >= before - 50


def test_resolve_commit_errors(repo_dir: Path) -> None:
    repo = gitrepo.require(repo_dir)
    with pytest.raises(gitrepo.RevisionError, match="no commits yet"):
        gitrepo.resolve_commit(repo, "HEAD")
    head = _commit(repo_dir)
    assert str(gitrepo.resolve_commit(repo, "HEAD").id) == head
    with pytest.raises(gitrepo.RevisionError, match="names no commit"):
        gitrepo.resolve_commit(repo, "nope")
    with pytest.raises(gitrepo.RevisionError):
        gitrepo.resolve_commit(repo, "--all")


def test_cas_create_update_delete(repo_dir: Path) -> None:
    head = _commit(repo_dir)
    repo = gitrepo.require(repo_dir)
    gitrepo.cas_ref(repo, "refs/vivary/t", head, None, "create")
    assert git(repo_dir, "rev-parse", "refs/vivary/t").strip() == head
    with pytest.raises(gitrepo.RefRaceError) as info:
        gitrepo.cas_ref(repo, "refs/vivary/t", head, None, "create again")
    assert info.value.actual == head
    gitrepo.cas_ref(repo, "refs/vivary/t", None, head, "delete")
    assert gitrepo.read_ref(repo, "refs/vivary/t") is None


def _racer(args: tuple[str, str, int]) -> bool:
    root, head, _ = args
    repo = pygit2.Repository(root)
    try:
        gitrepo.cas_ref(repo, "refs/vivary/race", head, None, "race")
    except gitrepo.RefRaceError:
        return False
    return True


def test_cas_race_has_one_winner(repo_dir: Path) -> None:
    head = _commit(repo_dir)
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        wins = pool.map(_racer, [(str(repo_dir), head, i) for i in range(16)])
    assert wins.count(True) == 1

