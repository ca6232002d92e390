"""One staged file, read as the next commit would record it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import repo as gitrepo
from tropo.git.snapshot import read_staged


def test_read_staged_is_the_index_not_the_tree_or_head(repo_dir: Path) -> None:
    write_files(repo_dir, {"a/pin": "one\n"})
    commit_all(repo_dir)
    repo = gitrepo.require(repo_dir)
    write_files(repo_dir, {"a/pin": "two\n"})
    assert read_staged(repo, "a/pin") == b"one\n"
    git(repo_dir, "add", "a/pin")
    write_files(repo_dir, {"a/pin": "three\n"})
    assert read_staged(repo, "a/pin") == b"two\n"
    assert read_staged(repo, "a/pi*") is None and read_staged(repo, "a/none") is None
    git(repo_dir, "rm", "-q", "-f", "--cached", "a/pin")
    assert read_staged(repo, "a/pin") is None


def test_read_staged_honours_git_index_file(
    repo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a hook for `git commit PATH` or `-a`, git names a temporary index."""
    write_files(repo_dir, {"pin": "one\n"})
    commit_all(repo_dir)
    other = tmp_path / "other-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(other)}
    write_files(repo_dir, {"pin": "two\n"})
    subprocess.run(["git", "add", "pin"], cwd=repo_dir, env=env, check=True)
    repo = gitrepo.require(repo_dir)
    assert read_staged(repo, "pin") == b"one\n"
    monkeypatch.setenv("GIT_INDEX_FILE", str(other))
    assert read_staged(repo, "pin") == b"two\n"
