from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import trees
from tropo.git.repo import require


def _repo(root: Path) -> tuple[pygit2.Repository, pygit2.Commit]:
    write_files(root, {"a/b/c.md": "old\n", "a/x.md": "x\n", "top.md": "t\n"})
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("top.md", root / "link.md")
    commit_all(root)
    repo = require(root)
    head = repo.head.peel(pygit2.Commit)
    return repo, head


def test_read_file(repo_dir: Path) -> None:
    repo, head = _repo(repo_dir)
    assert trees.read_file(repo, head.tree, "a/b/c.md") == trees.TreeFile(b"old\n", trees.BLOB)
    link = trees.read_file(repo, head.tree, "link.md")
    assert link is not None and link.filemode == trees.LINK
    assert trees.read_file(repo, head.tree, "a/nope.md") is None
    assert trees.read_file(repo, head.tree, "a") is None
    assert trees.read_file(repo, head.tree, "top.md/x") is None
    with pytest.raises(trees.TreePathError):
        trees.read_file(repo, head.tree, "a/../top.md")


def test_replace_file_touches_only_that_path(repo_dir: Path) -> None:
    repo, head = _repo(repo_dir)
    status_before = git(repo_dir, "status", "--porcelain")
    tree = trees.replace_file(repo, head.tree, "a/b/c.md", b"new\n")
    sig = pygit2.Signature("t", "t@example.com")
    oid = repo.create_commit(None, sig, sig, "edit", tree, [head.id])
    changed = git(repo_dir, "diff", "--name-status", str(head.id), str(oid)).split("\n")
    assert changed == ["M\ta/b/c.md", ""]
    assert git(repo_dir, "show", f"{oid}:a/b/c.md") == "new\n"
    # Work tree and index are untouched.
    assert (repo_dir / "a/b/c.md").read_text() == "old\n"
    assert git(repo_dir, "status", "--porcelain") == status_before == ""
    # Executable bit is kept; new files and directories are created.
    tree2 = trees.replace_file(repo, repo[tree], "run.sh", b"#!/bin/sh\necho\n")
    assert git(repo_dir, "ls-tree", str(tree2), "run.sh").startswith("100755")
    tree3 = trees.replace_file(repo, repo[tree2], "new/dir/f.md", b"f\n")
    assert git(repo_dir, "show", f"{tree3}:new/dir/f.md") == "f\n"


def test_replace_refuses_symlinks_and_files_as_dirs(repo_dir: Path) -> None:
    repo, head = _repo(repo_dir)
    with pytest.raises(trees.TreePathError):
        trees.replace_file(repo, head.tree, "link.md", b"x")
    with pytest.raises(trees.TreePathError):
        trees.replace_file(repo, head.tree, "top.md/inner.md", b"x")
    with pytest.raises(trees.TreePathError):
        trees.replace_file(repo, head.tree, "a", b"x")
