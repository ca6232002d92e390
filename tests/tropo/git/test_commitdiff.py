"""tropo.git.commitdiff against the real git: the commit graph and every pair's changes
from one diff-tree stream, as git itself lists them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import commitdiff
from tropo.git import repo as gitrepo
from tropo.git.gitcli import GitError

ZERO = "0" * 40


def test_graph_lists_children_before_parents_with_every_parent(repo_dir: Path) -> None:
    root = commit_all_files(repo_dir, {"a": "1\n"})
    git(repo_dir, "checkout", "-q", "-b", "side")
    side = commit_all_files(repo_dir, {"b": "side\n"})
    git(repo_dir, "checkout", "-q", "-")
    main = commit_all_files(repo_dir, {"a": "2\n"})
    git(repo_dir, "merge", "-q", "--no-ff", "-m", "merge", "side")
    merge = git(repo_dir, "rev-parse", "HEAD").strip()
    rows = commitdiff.graph(gitrepo.require(repo_dir), merge)
    assert rows[0] == [merge, main, side] and rows[-1] == [root]
    assert sorted(r[0] for r in rows) == sorted([root, side, main, merge])


def test_changes_of_each_pair_match_git_diff_tree(repo_dir: Path) -> None:
    first = commit_all_files(repo_dir, {"keep": "k\n", "gone": "g\n", "dir/edit": "1\n"})
    (repo_dir / "gone").unlink()
    second = commit_all_files(repo_dir, {"dir/edit": "2\n", "dir/new": "n\n"})
    repo = gitrepo.require(repo_dir)
    root, step, same = commitdiff.changes(repo, [(first, None), (second, first), (second, second)])
    assert sorted((c.path, c.status, c.old) for c in root) == [
        ("dir/edit", "A", ZERO), ("gone", "A", ZERO), ("keep", "A", ZERO)
    ]
    blob = {p: git(repo_dir, "rev-parse", f"{rev}:{p}").strip() for rev, p in
            [(first, "gone"), (second, "dir/new")]}
    assert sorted((c.path, c.status) for c in step) == [("dir/edit", "M"), ("dir/new", "A"), ("gone", "D")]
    by_path = {c.path: c for c in step}
    assert by_path["gone"].old == blob["gone"] and by_path["gone"].new == ZERO
    assert by_path["dir/new"].new == blob["dir/new"]
    assert same == []  # --always: a pair with no change still gets its (empty) place


def test_git_failure_is_one_sentence(repo_dir: Path) -> None:
    commit_all_files(repo_dir, {"a": "1\n"})
    with pytest.raises(GitError) as caught:
        commitdiff.graph(gitrepo.require(repo_dir), "1" * 40)
    assert "\n" not in str(caught.value) and str(caught.value)


def commit_all_files(root: Path, files: dict[str, str]) -> str:
    write_files(root, files)
    return commit_all(root, "change")
