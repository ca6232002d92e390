"""What git says differs from HEAD (or between two trees), read through real git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tropo.git import diff as gitdiff
from tropo.git.diff import LINK, Change
from tropo.git.gitcli import GitError


def _hash(repo: Path, text: str) -> str:
    (repo / ".tmp-blob").write_text(text)
    try:
        return git(repo, "hash-object", ".tmp-blob").strip()
    finally:
        (repo / ".tmp-blob").unlink()


def _by_path(delta: gitdiff.Delta) -> dict[str, Change]:
    return {c.rel: c for c in delta.changes}


def test_worktree_sees_staged_unstaged_untracked_and_deleted(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n", "b.md": "b\n", "c.md": "c\n", "d.md": "d\n"})
    commit_all(repo_dir)
    head = git(repo_dir, "rev-parse", "HEAD").strip()
    write_files(repo_dir, {"a.md": "a2\n", "b.md": "b2\n", "new.md": "n\n"})
    git(repo_dir, "add", "a.md")
    (repo_dir / "c.md").unlink()
    git(repo_dir, "rm", "-q", "--cached", "d.md")  # staged deletion, file still on disk
    delta = gitdiff.worktree(repo_dir, ".")
    assert delta.head == head and not delta.conflicted
    changes = _by_path(delta)
    assert changes["a.md"] == Change("a.md", _hash(repo_dir, "a2\n"), 0o100644)  # index == disk
    assert changes["b.md"] == Change("b.md", None, 0o100644)  # only the disk knows
    assert changes["c.md"].gone
    assert changes["d.md"] == Change("d.md", None, 0o100644)  # untracked again: on disk
    assert changes["new.md"] == Change("new.md", None, 0o100644)
    assert set(changes) == {"a.md", "b.md", "c.md", "d.md", "new.md"}


def test_index_sees_only_what_is_staged(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n", "b.md": "b\n"})
    commit_all(repo_dir)
    write_files(repo_dir, {"a.md": "a2\n", "b.md": "b2\n"})
    git(repo_dir, "add", "a.md")
    git(repo_dir, "rm", "-q", "--cached", "b.md")
    changes = _by_path(gitdiff.index(repo_dir, "."))
    assert changes == {"a.md": Change("a.md", _hash(repo_dir, "a2\n"), 0o100644),
                       "b.md": Change("b.md", None, 0)}


def test_a_symlink_replacing_a_file_is_a_link_change(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n", "t.md": "t\n"})
    commit_all(repo_dir)
    (repo_dir / "a.md").unlink()
    os.symlink("t.md", repo_dir / "a.md")
    assert _by_path(gitdiff.worktree(repo_dir, "."))["a.md"] == Change("a.md", None, LINK)
    os.symlink("/etc/hostname", repo_dir / "u.md")
    assert _by_path(gitdiff.worktree(repo_dir, "."))["u.md"].mode == LINK


def test_pathspec_limits_to_the_workspace_and_paths_stay_top_relative(repo_dir: Path) -> None:
    write_files(repo_dir, {"kb [x]/a.md": "a\n", "other/b.md": "b\n"})
    commit_all(repo_dir)
    write_files(repo_dir, {"kb [x]/a.md": "a2\n", "other/b.md": "b2\n", "kb [x]/n.md": "n\n"})
    assert sorted(_by_path(gitdiff.worktree(repo_dir, ":(literal)kb [x]"))) == ["kb [x]/a.md", "kb [x]/n.md"]
    git(repo_dir, "add", "-A")
    assert sorted(_by_path(gitdiff.index(repo_dir, ":(literal)kb [x]"))) == ["kb [x]/a.md", "kb [x]/n.md"]


def test_no_commit_yet_has_no_head(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n"})
    assert gitdiff.worktree(repo_dir, ".").head is None
    git(repo_dir, "add", "a.md")
    assert gitdiff.index(repo_dir, ".") == gitdiff.Delta(None, (), False)


def test_an_unmerged_index_is_conflicted(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "base\n"})
    commit_all(repo_dir)
    git(repo_dir, "checkout", "-q", "-b", "other")
    write_files(repo_dir, {"a.md": "other\n"})
    commit_all(repo_dir)
    git(repo_dir, "checkout", "-q", "-")
    write_files(repo_dir, {"a.md": "main\n"})
    commit_all(repo_dir)
    git(repo_dir, "merge", "-q", "other", check=False)
    assert gitdiff.worktree(repo_dir, ".").conflicted
    assert gitdiff.index(repo_dir, ".").conflicted


def test_between_two_trees(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n", "b.md": "b\n"})
    commit_all(repo_dir)
    first = gitdiff.tree_of(repo_dir, "HEAD")
    (repo_dir / "b.md").unlink()
    write_files(repo_dir, {"a.md": "a2\n", "c.md": "c\n"})
    commit_all(repo_dir)
    second = gitdiff.tree_of(repo_dir, "HEAD")
    changes = {c.rel: c for c in gitdiff.between(repo_dir, first, second, ".")}
    assert changes == {"a.md": Change("a.md", _hash(repo_dir, "a2\n"), 0o100644),
                       "b.md": Change("b.md", None, 0),
                       "c.md": Change("c.md", _hash(repo_dir, "c\n"), 0o100644)}


def _ls_tree(repo: Path, tree: str, paths: list[str]) -> list[Change]:
    """What `git ls-tree` itself lists for those literal paths: the answer `blobs_at` keeps."""
    found = []
    argv = ["git", "ls-tree", "-z", "--full-tree", tree, "--", *(f":(literal){p}" for p in paths)]
    listing = subprocess.run(argv, cwd=repo, capture_output=True, check=True).stdout
    for rec in filter(None, listing.decode("utf-8", "surrogateescape").split("\0")):
        meta, _, path = rec.partition("\t")
        mode, kind, oid = meta.split(" ")
        if kind == "blob":
            found.append(Change(path, oid, int(mode, 8)))
    return found


def test_a_trees_blobs_are_what_git_lists(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n", "kb/b.md": "b\n", "kb/deep/c.md": "c\n", "kb/x.md": "x\n"})
    os.symlink("a.md", repo_dir / "link.md")
    odd = os.fsdecode(b"odd-\xff.md")  # a name that is not UTF-8, kept as git keeps it
    with open(os.path.join(os.fsencode(repo_dir), os.fsencode(odd)), "w") as fh:
        fh.write("o\n")
    commit_all(repo_dir)
    write_files(repo_dir, {"a.md": "a2\n"})
    commit_all(repo_dir)
    tree = gitdiff.tree_of(repo_dir, "HEAD")
    paths = ["a.md", "kb/b.md", "kb/deep/c.md", "link.md", odd, "none.md", "a.md/x", "kb/none/c.md"]
    got = gitdiff.blobs_at(repo_dir, tree, paths)
    assert sorted(got, key=lambda c: c.rel) == sorted(_ls_tree(repo_dir, tree, paths), key=lambda c: c.rel)
    assert {c.rel for c in got} == {"a.md", "kb/b.md", "kb/deep/c.md", "link.md", odd}
    assert next(c for c in got if c.rel == "link.md").mode == LINK
    # a folder is no file: git's listing of ["kb", "kb/b.md"] would add every file in kb
    assert gitdiff.blobs_at(repo_dir, tree, ["kb", "kb/deep", "kb/b.md"]) == [c for c in got if c.rel == "kb/b.md"]


def test_a_name_of_no_tree_is_a_git_error(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n"})
    commit_all(repo_dir)
    for tree in ("0" * 40, "no-such-tree"):
        with pytest.raises(GitError):
            gitdiff.blobs_at(repo_dir, tree, ["a.md"])


_GIT_WAY = """
import json, sys
from tropo.git import diff
from tropo.git.gitcli import GitError
answers = []
for rev in sys.argv[2:]:
    try:
        answers.append(diff.tree_of(sys.argv[1], rev))
    except GitError:
        answers.append(None)
assert "pygit2" not in sys.modules  # the way a warm `tropo check` asks: git, no bindings
print(json.dumps(answers))
"""


def test_tree_of_answers_alike_with_the_bindings_loaded_and_without(repo_dir: Path) -> None:
    """A process with pygit2 loaded asks it; one without (a warm check) asks git: the
    same tree for every revision, and a GitError for one that names no commit."""
    write_files(repo_dir, {"a.md": "a\n"})
    commit_all(repo_dir)
    write_files(repo_dir, {"a.md": "a2\n", "kb/b.md": "b\n"})
    commit_all(repo_dir)
    git(repo_dir, "tag", "-a", "-m", "v1", "v1", "HEAD~1")
    head = git(repo_dir, "rev-parse", "HEAD").strip()
    revs = ["HEAD", "HEAD~1", "HEAD^", head, head[:12], "main", "v1", "refs/tags/v1", "no-such-rev",
            "0" * 40, "HEAD~5", git(repo_dir, "rev-parse", "HEAD^{tree}").strip()]
    proc = subprocess.run([sys.executable, "-c", _GIT_WAY, str(repo_dir), *revs], capture_output=True,
                          text=True, check=True)
    by_git = json.loads(proc.stdout)
    import pygit2  # noqa: F401  (loaded, as in `tropo diff`: this process asks the bindings)

    in_process = []
    for rev in revs:
        try:
            in_process.append(gitdiff.tree_of(repo_dir, rev))
        except GitError:
            in_process.append(None)
    assert in_process == by_git
    trees = [git(repo_dir, "rev-parse", "--verify", "--quiet", f"{rev}^{{tree}}", check=False).strip() or None
             for rev in revs]
    assert in_process == trees
    assert in_process[8:11] == [None, None, None]  # no such name, no such object, no such ancestor
    assert in_process[-1] == revs[-1]  # a tree names itself


def test_head_tree_names_head_and_its_tree_even_beside_a_file_named_head(repo_dir: Path) -> None:
    assert gitdiff.head_tree(repo_dir) is None  # no commit yet
    write_files(repo_dir, {"HEAD": "a file, not a revision\n", "a.md": "a\n"})
    commit_all(repo_dir)
    head = git(repo_dir, "rev-parse", "HEAD").strip()
    assert gitdiff.head_tree(repo_dir) == (head, gitdiff.tree_of(repo_dir, head))


def test_a_started_status_reads_as_worktree_does(repo_dir: Path) -> None:
    write_files(repo_dir, {"a.md": "a\n"})
    commit_all(repo_dir)
    write_files(repo_dir, {"a.md": "a2\n", "b.md": "b\n"})
    with gitdiff.start_worktree(repo_dir, ".") as started:
        assert gitdiff.worktree_delta(repo_dir, started) == gitdiff.worktree(repo_dir, ".")
