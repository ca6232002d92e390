from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.repos import commit_all, write_files
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
