from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import objects
from tropo.git import repo as gitrepo
from tropo.git.repo import require
from tropo.git.types import hash_blob


def _repo(root: Path) -> tuple[pygit2.Repository, pygit2.Commit]:
    write_files(root, {"a/b/c.md": "old\n", "a/x.md": "x\n", "top.md": "t\n"})
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("top.md", root / "link.md")
    commit_all(root)
    repo = require(root)
    head = repo.head.peel(pygit2.Commit)
    return repo, head


def test_tree_file(repo_dir: Path) -> None:
    repo, head = _repo(repo_dir)
    assert objects.tree_file(repo, head.tree, "a/b/c.md") == objects.TreeFile(b"old\n", objects.BLOB)
    link = objects.tree_file(repo, head.tree, "link.md")
    assert link is not None and link.filemode == objects.LINK
    assert objects.tree_file(repo, head.tree, "a/nope.md") is None
    assert objects.tree_file(repo, head.tree, "a") is None
    assert objects.tree_file(repo, head.tree, "top.md/x") is None
    with pytest.raises(objects.TreePathError):
        objects.tree_file(repo, head.tree, "a/../top.md")


def test_replace_file_touches_only_that_path(repo_dir: Path) -> None:
    repo, head = _repo(repo_dir)
    status_before = git(repo_dir, "status", "--porcelain")
    tree = objects.replace_file(repo, head.tree, "a/b/c.md", b"new\n")
    sig = pygit2.Signature("t", "t@example.com")
    oid = repo.create_commit(None, sig, sig, "edit", tree, [head.id])
    changed = git(repo_dir, "diff", "--name-status", str(head.id), str(oid)).split("\n")
    assert changed == ["M\ta/b/c.md", ""]
    assert git(repo_dir, "show", f"{oid}:a/b/c.md") == "new\n"
    # Work tree and index are untouched.
    assert (repo_dir / "a/b/c.md").read_text() == "old\n"
    assert git(repo_dir, "status", "--porcelain") == status_before == ""
    # Executable bit is kept; new files and directories are created.
    tree2 = objects.replace_file(repo, repo[tree], "run.sh", b"#!/bin/sh\necho\n")
    assert git(repo_dir, "ls-tree", str(tree2), "run.sh").startswith("100755")
    tree3 = objects.replace_file(repo, repo[tree2], "new/dir/f.md", b"f\n")
    assert git(repo_dir, "show", f"{tree3}:new/dir/f.md") == "f\n"


def test_replace_refuses_symlinks_and_files_as_dirs(repo_dir: Path) -> None:
    repo, head = _repo(repo_dir)
    with pytest.raises(objects.TreePathError):
        objects.replace_file(repo, head.tree, "link.md", b"x")
    with pytest.raises(objects.TreePathError):
        objects.replace_file(repo, head.tree, "top.md/inner.md", b"x")
    with pytest.raises(objects.TreePathError):
        objects.replace_file(repo, head.tree, "a", b"x")


def test_commit_files_writes_over_the_parent_and_leaves_the_checkout_alone(repo_dir: Path) -> None:
    repo, head = _repo(repo_dir)
    status = git(repo_dir, "status", "--porcelain")
    new = objects.commit_files(repo, head.id, {"a/b/c.md": b"new\n", "run.sh": b"#!/bin/sh\nexit 0\n",
                                               "d/e.md": b"e\n"}, "edit\n\nwhy\n")
    assert git(repo_dir, "rev-parse", "HEAD").strip() == str(head.id)
    assert git(repo_dir, "status", "--porcelain") == status
    assert git(repo_dir, "rev-parse", f"{new}^").strip() == str(head.id)
    assert git(repo_dir, "show", f"{new}:a/b/c.md") == "new\n"
    assert git(repo_dir, "show", f"{new}:d/e.md") == "e\n"
    assert git(repo_dir, "show", f"{new}:a/x.md") == "x\n"
    assert git(repo_dir, "ls-tree", str(new), "run.sh").split()[0] == "100755"
    assert git(repo_dir, "log", "-1", "--format=%B", str(new)).strip() == "edit\n\nwhy"


def counts(root: Path) -> dict[str, str]:
    return dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())


def test_gc_auto_packs_when_git_judges_there_are_too_many(repo_dir: Path) -> None:
    repo = gitrepo.require(repo_dir)
    # git estimates the loose objects from those whose id starts with 17: commit two of them
    seventeen = [d for d in (f"blob {n}\n".encode() for n in range(5000)) if hash_blob(d).startswith("17")]
    for n, data in enumerate(seventeen[:2]):
        (repo_dir / f"f{n}").write_bytes(data)
    commit_all(repo_dir)
    git(repo_dir, "config", "gc.auto", "1")  # (after the commit, whose own gc --auto would pack)
    git(repo_dir, "config", "gc.autoDetach", "false")  # so that it is done when we look
    assert counts(repo_dir)["count"] != "0"
    objects.gc_auto(repo)
    assert counts(repo_dir)["count"] == "0" and counts(repo_dir)["in-pack"] != "0"
