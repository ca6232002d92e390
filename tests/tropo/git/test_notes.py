"""tropo.git.notes against the real git binary: what we write, git reads, and back."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

REF = "refs/notes/test"


def test_anchor_is_stable_and_matches_git_hash_object(repo_dir: Path) -> None:
    repo = gitrepo.require(repo_dir)
    oid = notes.anchor(repo, b"key one")
    assert oid == notes.anchor_id(b"key one") == notes.anchor(repo, b"key one")
    (repo_dir / "k").write_bytes(b"key one")
    assert git(repo_dir, "hash-object", "k").strip() == oid


def test_write_read_and_git_agrees(repo_dir: Path) -> None:
    repo = gitrepo.require(repo_dir)
    target = notes.anchor(repo, b"a")
    tip1 = notes.write(repo, REF, None, target, b"one\n", "first")
    tip2 = notes.write(repo, REF, tip1, target, b"one\ntwo\n", "second")
    assert notes.read(repo, tip2, target) == b"one\ntwo\n"
    assert notes.read(repo, tip1, target) == b"one\n"  # history keeps every version
    assert git(repo_dir, "notes", "--ref=test", "show", target) == "one\ntwo\n"
    assert [str(c.id) for c in notes.commits(repo, tip2)] == [tip2, tip1]
    assert [str(c.id) for c in notes.commits(repo, tip2, hide=[tip1])] == [tip2]
    # and a note git writes, we read
    other = notes.anchor(repo, b"b")
    git(repo_dir, "notes", "--ref=test", "add", "-m", "from git", other)
    assert notes.read(repo, gitrefs.read_ref(repo, REF), other) == b"from git\n"
    assert set(notes.blobs(repo, gitrefs.read_ref(repo, REF))) == {target, other}


def test_write_is_compare_and_swap(repo_dir: Path) -> None:
    repo = gitrepo.require(repo_dir)
    target = notes.anchor(repo, b"a")
    tip = notes.write(repo, REF, None, target, b"x", "first")
    notes.write(repo, REF, tip, target, b"xy", "winner")
    with pytest.raises(gitrefs.RefRaceError) as info:
        notes.write(repo, REF, tip, target, b"xz", "loser")
    assert info.value.actual == gitrefs.read_ref(repo, REF)
    assert notes.read(repo, gitrefs.read_ref(repo, REF), target) == b"xy"
    with pytest.raises(gitrefs.RefRaceError):
        notes.write(repo, REF, None, target, b"again", "create twice")


def test_fanned_out_notes_are_read_and_updated_in_place(repo_dir: Path) -> None:
    """git fans a notes tree out into xx/ directories once it holds many notes."""
    repo = gitrepo.require(repo_dir)
    targets = [notes.anchor(repo, f"object {i}".encode()) for i in range(300)]
    # one flat notes commit holding 300 notes; git fans it out on its next change
    builder = repo.TreeBuilder()
    for i, target in enumerate(targets):
        builder.insert(target, repo.create_blob(f"{i}\n".encode()), pygit2.GIT_FILEMODE_BLOB)
    sig = gitrepo.signature(repo)
    flat = repo.create_commit(None, sig, sig, "flat", builder.write(), [])
    gitrefs.cas_ref(repo, REF, flat, None, "flat")
    git(repo_dir, "notes", "--ref=test", "add", "-f", "-m", "changed", targets[0])
    tree = git(repo_dir, "ls-tree", REF)
    assert "\ttree" not in tree and " tree " in tree  # really fanned out
    tip = gitrefs.read_ref(repo, REF)
    assert notes.read(repo, tip, targets[5]) == b"5\n"
    assert len(notes.blobs(repo, tip)) == 300
    new_tip = notes.write(repo, REF, tip, targets[7], b"7 and more\n", "append")
    assert git(repo_dir, "notes", "--ref=test", "show", targets[7]) == "7 and more\n"
    assert len(notes.blobs(repo, new_tip)) == 300  # updated in place, not duplicated


def test_write_keeps_every_annotated_blob_reachable(repo_dir: Path) -> None:
    """A note git wrote on a loose blob before is backfilled by our next write."""
    repo = gitrepo.require(repo_dir)
    (repo_dir / "k").write_bytes(b"older anchor")
    older = git(repo_dir, "hash-object", "-w", "k").strip()
    git(repo_dir, "notes", "--ref=test", "add", "-m", "old", older)
    assert notes.kept_anchors(repo, gitrefs.read_ref(repo, REF)) == set()
    target = notes.anchor(repo, b"new anchor")
    tip = notes.write(repo, REF, gitrefs.read_ref(repo, REF), target, b"x\n", "ours")
    assert notes.kept_anchors(repo, tip) == {older, target}
    git(repo_dir, "gc", "-q", "--prune=now")
    git(repo_dir, "notes", "--ref=test", "prune")
    assert git(repo_dir, "notes", "--ref=test", "show", older) == "old\n"
    assert notes.read(repo, gitrefs.read_ref(repo, REF), target) == b"x\n"
