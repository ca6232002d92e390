"""Ledgers survive git's own housekeeping and travel with a clone: the anchors the notes
hang on are kept reachable in the notes tree."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

from strato.guard import engine, store
from strato.guard.verify import verify_repository
from tests.support.guard import POLICY, Workspace
from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

RIDS = ("release:1.0", "compose:FEAT-1", "svc:api")


def ledgers(root: Path) -> dict[str, str]:
    repo = gitrepo.require(root)
    return {
        rid: engine.history(repo, {"resource_id": rid})["current_state"] for rid in RIDS
    }


ANCHORS = {notes.anchor_id(store.anchor_content(rid)) for rid in RIDS}


def build(ws: Workspace) -> dict[str, str]:
    for rid in RIDS:
        engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    move = {"from_state": "draft", "to_state": "review"}
    engine.transition(ws.repo, {"resource_id": RIDS[0], **move})
    engine.transition(ws.repo, {"resource_id": RIDS[1], **move})
    assert verify_repository(ws.repo).ok
    return ledgers(ws.root)


def test_gc_prune_and_notes_prune_keep_every_ledger(ws: Workspace) -> None:
    before = build(ws)
    tip = gitrefs.read_ref(ws.repo, store.REF)
    assert notes.kept_anchors(ws.repo, tip) == ANCHORS
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    git(ws.root, "gc", "-q", "--prune=now")
    git(ws.root, "notes", "--ref=vivary/guard", "prune")
    assert gitrefs.read_ref(ws.repo, store.REF) == tip  # prune found nothing to drop
    for anchor in ANCHORS:
        git(ws.root, "cat-file", "-e", anchor)
    assert verify_repository(ws.repo).ok
    assert ledgers(ws.root) == before == {
        "release:1.0": "review",
        "compose:FEAT-1": "review",
        "svc:api": "draft",
    }


def test_a_fresh_clone_of_the_notes_ref_verifies(ws: Workspace, tmp_path: Path) -> None:
    before = build(ws)
    bare, clone = tmp_path / "origin.git", tmp_path / "clone"
    git(ws.root, "clone", "-q", "--bare", "--no-local", str(ws.root), str(bare))
    git(ws.root, "push", "-q", str(bare), f"{store.REF}:{store.REF}")
    subprocess.run(["git", "clone", "-q", "--no-local", str(bare), str(clone)], check=True)
    git(clone, "fetch", "-q", "origin", f"+{store.REF}:{store.REF}")
    git(clone, "gc", "-q", "--prune=now")
    git(clone, "notes", "--ref=vivary/guard", "prune")
    for anchor in ANCHORS:
        git(clone, "cat-file", "-e", anchor)
    assert verify_repository(gitrepo.require(clone)).ok
    assert ledgers(clone) == before
    # and the clone can keep appending
    repo = gitrepo.require(clone)
    (clone / "NOTES.md").write_text("n\n")
    move = {"resource_id": "svc:api", "from_state": "draft", "to_state": "review"}
    assert engine.transition(repo, move)["status"] == "applied"


def test_git_notes_own_writes_keep_the_anchors(ws: Workspace) -> None:
    build(ws)
    head = git(ws.root, "rev-parse", "HEAD").strip()
    git(ws.root, "notes", "--ref=vivary/guard", "add", "-m", "a person's note", head)
    tip = gitrefs.read_ref(ws.repo, store.REF)
    assert notes.kept_anchors(ws.repo, tip) == ANCHORS
    assert verify_repository(ws.repo).ok is False  # a note that is no ledger is reported
    git(ws.root, "notes", "--ref=vivary/guard", "remove", head)
    git(ws.root, "gc", "-q", "--prune=now")
    git(ws.root, "notes", "--ref=vivary/guard", "prune")
    assert set(ledgers(ws.root)) == set(RIDS)
