from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git.repo import require
from tropo.git.worktrees import WorktreeError, add_worktree, checked_out_at


def test_add_worktree_checks_the_branch_out(repo_dir: Path, tmp_path: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n"})
    commit_all(repo_dir)
    git(repo_dir, "branch", "topic")
    repo = require(repo_dir)
    assert checked_out_at(repo, "refs/heads/topic") is None
    made = add_worktree(repo, tmp_path / "topic wt", "refs/heads/topic")
    assert (made / "a.md").read_text() == "a\n"
    assert git(made, "symbolic-ref", "HEAD").strip() == "refs/heads/topic"
    assert checked_out_at(repo, "refs/heads/topic") == made
    with pytest.raises(WorktreeError, match="already exists"):
        add_worktree(repo, made, "refs/heads/topic")
    with pytest.raises(WorktreeError, match="cannot add worktree"):
        add_worktree(repo, tmp_path / "other", "refs/heads/missing")
    assert not (tmp_path / "other").exists()
