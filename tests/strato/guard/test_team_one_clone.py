"""Issue 27, two pull requests opened from ONE clone. A clone has one notes ref, so
without a chain per branch the second branch's writes chain after the first's, its pin
holds them, its review shows them, and its merge carries them into main even when the
first is closed unmerged. Real clones, a bare remote, real ssh-keygen keys, the hooks,
and CI by the documented recipe in a fresh clone per pull request; every guard step
through the CLI, as a person at the terminal writes it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from hooks import install as installer
from strato.guard import branchnotes, pin, precommit, signedops, store
from tests.support.guard import (
    POLICY,
    Key,
    Workspace,
    at_review,
    ci,
    forge,
    ledger,
    origin_with_main,
    run,
    sign_override,
)
from tests.support.repos import git
from tropo.git import notes


def _ok(ws: Workspace, *args: str, stdin: dict[str, object] | None = None) -> dict[str, object]:
    proc = run(ws, *args, stdin=stdin or "")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    doc: dict[str, object] = json.loads(proc.stdout)
    assert doc.get("status") not in ("error", None), doc
    return doc


def _register(ws: Workspace, rid: str) -> None:
    _ok(ws, "register", stdin={"resource_id": rid, **copy.deepcopy(POLICY)})


def _move(ws: Workspace, rid: str, src: str, dst: str) -> str:
    return str(_ok(ws, "transition", stdin={"resource_id": rid, "from_state": src, "to_state": dst})["status"])


def _open(ws: Workspace, branch: str, rid: str) -> None:
    """A branch off main with a guarded resource: registered, moved to review (applied)."""
    git(ws.root, "checkout", "-q", "-b", branch, "main")
    ws.commit({"NOTES.md": "n\n", f"{branch}.txt": "work\n"}, f"{branch}: work")
    _register(ws, rid)
    assert _move(ws, rid, "draft", "review") == "applied"
    git(ws.root, "add", "-A")
    assert precommit.check(ws.root) == []  # the staged pin is this branch's chain
    git(ws.root, "commit", "-q", "-m", f"{branch}: guard steps")


def _anchors(ws: Workspace, tip: str | None) -> set[str]:
    return {kept.anchor for kept in store.ledgers(ws.repo, tip)}


def _anchor(rid: str) -> str:
    return notes.anchor_id(store.anchor_content(rid))


def _reviewed(remote: Path, branch: str, where: Path) -> dict[str, object]:
    """The documented CI recipe in a fresh clone, then the same review as JSON there."""
    proc = ci(remote, branch, where)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc: dict[str, object] = json.loads(run(where, "review", "--base", "refs/remotes/origin/main",
                                            "--json").stdout)
    return doc


def _rows(doc: dict[str, object]) -> list[tuple[str, int]]:
    entries = doc["entries"]
    assert isinstance(entries, list)
    return [(row["resource_id"], row["line"]) for row in entries]


def test_two_prs_from_one_clone_each_review_shows_only_its_own_entries(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """A opens, B opens from the same clone, A gets one more step: each branch's pin holds
    only main's notes and its own writes, and each review shows exactly its own entries.
    The pre-commit check and `pin --check` judge each branch's pin by its own chain."""
    remote = origin_with_main(ws, key, tmp_path)
    installer.install(ws.root, ("pre-push",))
    _open(ws, "pr-a", "release:a")
    _open(ws, "pr-b", "release:b")
    git(ws.root, "checkout", "-q", "pr-a")
    assert run(ws, "pin", "--check").returncode == 0
    assert _move(ws, "release:a", "review", "released") == "refused"  # one more line on A
    git(ws.root, "add", "-A")
    assert precommit.check(ws.root) == []
    git(ws.root, "commit", "-q", "-m", "pr-a: one more step")
    for branch in ("pr-a", "pr-b"):
        git(ws.root, "push", "-q", "origin", branch)
    pins = {b: git(ws.root, "show", f"{b}:{pin.PIN_PATH}").strip() for b in ("pr-a", "pr-b")}
    assert _anchors(ws, pins["pr-a"]) == {_anchor("release:a")}
    assert _anchors(ws, pins["pr-b"]) == {_anchor("release:b")}
    a = _reviewed(remote, "pr-a", tmp_path / "ci-a")
    b = _reviewed(remote, "pr-b", tmp_path / "ci-b")
    assert _rows(a) == [("release:a", 1), ("release:a", 2), ("release:a", 3)]
    assert _rows(b) == [("release:b", 1), ("release:b", 2)]


def test_a_pr_closed_unmerged_never_rides_into_main_on_a_sibling_from_the_same_clone(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """A is closed unmerged; B, opened later from the same clone, merges: what main pins
    then holds B's ledger and never A's."""
    remote = origin_with_main(ws, key, tmp_path)
    installer.install(ws.root, ("pre-push",))
    _open(ws, "pr-a", "release:a")
    git(ws.root, "push", "-q", "origin", "pr-a")
    _open(ws, "pr-b", "release:b")
    git(ws.root, "push", "-q", "origin", "pr-b")
    assert _rows(_reviewed(remote, "pr-b", tmp_path / "ci-b")) == [("release:b", 1), ("release:b", 2)]
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge pr-b", "pr-b")  # pr-a: closed, never merged
    git(ws.root, "push", "-q", "origin", "main")
    landed = git(remote, "show", f"main:{pin.PIN_PATH}").strip()
    assert _anchors(ws, landed) == {_anchor("release:b")}


def test_a_planted_branch_record_only_adds_entries_its_review_shows_and_judges(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """An attacker who got a notes commit into this clone's record of the branch (a fetch
    of `refs/vivary/*`) with a forged override: the branch's next write starts from it,
    so the pin carries it, and the review shows every planted line and fails."""
    origin_with_main(ws, key, tmp_path)
    git(ws.root, "checkout", "-q", "-b", "pr-x", "main")
    at_review(ws)  # the planted chain: release:9 with an override, then forged
    signedops.override(ws.repo, sign_override(ws, key, "ship it"))
    entries = ledger(ws)
    entries[-1]["rationale"] = "approved by nobody"
    forge(ws, entries)
    planted = git(ws.root, "rev-parse", store.REF).strip()
    git(ws.root, "update-ref", "-d", store.REF)
    _register(ws, "other:1")  # this clone's notes: another branch's write
    git(ws.root, "update-ref", branchnotes.record_ref("other"), git(ws.root, "rev-parse", store.REF).strip())
    git(ws.root, "update-ref", branchnotes.record_ref("pr-x"), planted)
    git(ws.root, "checkout", "-q", "--", pin.PIN_PATH)  # pr-x pins what main pins: none
    _register(ws, "mine:1")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "pr-x: mine")
    proc = run(ws, "review", "--base", "refs/heads/main", "--head", "HEAD", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and not doc["ok"], doc
    rows = {(row["resource_id"], row["line"]): row["status"] for row in doc["entries"]}
    assert set(rows) == {("release:9", 1), ("release:9", 2), ("release:9", 3), ("mine:1", 1)}
    assert rows[("release:9", 3)].startswith("refused")


def test_two_worktrees_of_one_clone_each_pin_only_their_own_writes(ws: Workspace, tmp_path: Path) -> None:
    """`git worktree`s share the notes ref; each write switches it to its branch's chain."""
    ws.commit({pin.PIN_PATH: "none\n"}, "main: pins no ledgers yet")
    git(ws.root, "branch", "-M", "main")
    other = Workspace(tmp_path / "wt-b", tmp_path)
    git(ws.root, "worktree", "add", "-q", "-b", "pr-b", str(other.root), "main")
    git(ws.root, "checkout", "-q", "-b", "pr-a")
    _register(ws, "tree:a")
    _register(other, "tree:b")
    _register(ws, "tree:a2")
    mine, theirs = ((w.root / pin.PIN_PATH).read_text().strip() for w in (ws, other))
    assert _anchors(ws, mine) == {_anchor("tree:a"), _anchor("tree:a2")}
    assert _anchors(ws, theirs) == {_anchor("tree:b")}
