"""One file's first-parent walk in a real repository: added, changed, renamed (followed
back under the old name), unrelated commits skipped, bytes on either side."""

from __future__ import annotations

from pathlib import Path

from tests.support.repos import commit_all, git, write_files
from tropo.git.pathlog import path_log
from tropo.git.repo import require, resolve_commit


def test_a_file_is_followed_through_changes_and_a_rename(repo_dir: Path) -> None:
    body = "---\nstatus: open\n---\n# A long enough title so that git sees a rename\n" + "line\n" * 20
    write_files(repo_dir, {"notes/a.md": body, "other.md": "x\n"})
    added = commit_all(repo_dir, "add a")
    write_files(repo_dir, {"other.md": "y\n"})
    commit_all(repo_dir, "touch only another file")
    write_files(repo_dir, {"notes/a.md": body.replace("open", "done")})
    changed = commit_all(repo_dir, "close a")
    git(repo_dir, "mv", "notes/a.md", "notes/b.md")
    renamed = commit_all(repo_dir, "rename a to b")
    repo = require(repo_dir)
    steps = path_log(resolve_commit(repo, "HEAD"), "notes/b.md")
    assert [(str(s.commit.id), s.kind, s.path, s.from_path) for s in steps] == [
        (added, "added", "notes/a.md", None),
        (changed, "changed", "notes/a.md", None),
        (renamed, "renamed", "notes/b.md", "notes/a.md"),
    ]
    assert steps[0].before is None and steps[0].after == body.encode()
    assert steps[1].before == body.encode() and b"status: done" in steps[1].after
    assert steps[2].before == steps[2].after


def test_a_path_the_commit_lacks_has_no_steps(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n"})
    commit_all(repo_dir)
    repo = require(repo_dir)
    assert path_log(resolve_commit(repo, "HEAD"), "missing.md") == []
