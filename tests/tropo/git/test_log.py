"""History walks against git itself: a chain's commits in git's topological order,
every (commit, parent) pair's changes from one diff-tree stream, and one file's steps
through changes and renames."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import log as gitlog
from tropo.git import repo as gitrepo
from tropo.git.gitcli import GitError
from tropo.git.log import commits_since, path_log
from tropo.git.repo import require, resolve_commit


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def chain_dir(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "config", "user.name", "T")
    _git(tmp_path, "config", "user.email", "t@example.com")
    for n in range(3):
        _git(tmp_path, "commit", "-q", "--allow-empty", "-m", f"c{n}\n\nbody {n}")
    _git(tmp_path, "checkout", "-q", "-b", "side", "HEAD~1")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "side")
    _git(tmp_path, "checkout", "-q", "main")
    _git(tmp_path, "merge", "-q", "--no-ff", "-m", "merge", "side")
    return tmp_path


def test_the_walk_is_gits_topological_order_with_full_messages(chain_dir: Path) -> None:
    repo = require(chain_dir)
    head = _git(chain_dir, "rev-parse", "HEAD")
    walked = commits_since(repo, head)
    assert [c for c, _ in walked] == _git(chain_dir, "rev-list", "--topo-order", "HEAD").split()
    assert walked[-1][1] == "c0\n\nbody 0\n"


def test_the_walk_stops_at_what_was_seen(chain_dir: Path) -> None:
    repo = require(chain_dir)
    head, seen = _git(chain_dir, "rev-parse", "HEAD"), _git(chain_dir, "rev-parse", "main~1")
    expected = _git(chain_dir, "rev-list", "--topo-order", "HEAD", f"^{seen}").split()
    assert [c for c, _ in commits_since(repo, head, seen)] == expected
    assert commits_since(repo, head, head) == []



ZERO = "0" * 40


def test_graph_lists_children_before_parents_with_every_parent(repo_dir: Path) -> None:
    root = commit_all_files(repo_dir, {"a": "1\n"})
    git(repo_dir, "checkout", "-q", "-b", "side")
    side = commit_all_files(repo_dir, {"b": "side\n"})
    git(repo_dir, "checkout", "-q", "-")
    main = commit_all_files(repo_dir, {"a": "2\n"})
    git(repo_dir, "merge", "-q", "--no-ff", "-m", "merge", "side")
    merge = git(repo_dir, "rev-parse", "HEAD").strip()
    rows = gitlog.graph(gitrepo.require(repo_dir), merge)
    assert rows[0] == [merge, main, side] and rows[-1] == [root]
    assert sorted(r[0] for r in rows) == sorted([root, side, main, merge])


def test_changes_of_each_pair_match_git_diff_tree(repo_dir: Path) -> None:
    first = commit_all_files(repo_dir, {"keep": "k\n", "gone": "g\n", "dir/edit": "1\n"})
    (repo_dir / "gone").unlink()
    second = commit_all_files(repo_dir, {"dir/edit": "2\n", "dir/new": "n\n"})
    repo = gitrepo.require(repo_dir)
    root, step, same = gitlog.changes(repo, [(first, None), (second, first), (second, second)])
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
        gitlog.graph(gitrepo.require(repo_dir), "1" * 40)
    assert "\n" not in str(caught.value) and str(caught.value)


def commit_all_files(root: Path, files: dict[str, str]) -> str:
    write_files(root, files)
    return commit_all(root, "change")



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
