"""The notes pin kept current for honest contributors: guard writes move it forward in the
work tree, `strato guard pin --check` says whether it is current; never through a symlink."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

from strato.guard import engine, pin, store
from tests.conftest import commit_all, git
from tests.strato.guard.conftest import POLICY, Workspace, put_ledger
from tests.strato.guard.test_cli import run

REGISTER = {"resource_id": "pin:1", **copy.deepcopy(POLICY)}
TO_REVIEW = {"resource_id": "pin:1", "from_state": "draft", "to_state": "review"}


def tip(ws: Workspace) -> str:
    return git(ws.root, "rev-parse", store.REF).strip()


def pinned(ws: Workspace) -> str:
    return (ws.root / pin.PIN_PATH).read_text()


def test_a_guard_write_moves_the_pin_forward_and_says_so(ws: Workspace) -> None:
    ws.pin("main: no ledgers yet")
    assert pinned(ws) == "none\n"
    reg = run(ws, "register", stdin=REGISTER)
    assert reg.returncode == 0 and json.loads(reg.stdout)["status"] == "registered"
    assert pinned(ws) == tip(ws) + "\n"
    assert reg.stderr == f"strato guard: {pin.PIN_PATH} now pins notes commit {tip(ws)[:12]}: commit it with your change\n"
    ws.commit({"NOTES.md": "n\n"})
    moved = run(ws, "transition", stdin=TO_REVIEW)
    assert json.loads(moved.stdout)["status"] == "applied" and pinned(ws) == tip(ws) + "\n"
    assert run(ws, "pin", "--check").returncode == 0


def test_a_command_that_moves_no_notes_leaves_the_pin_alone(ws: Workspace) -> None:
    engine.register(ws.repo, REGISTER)
    ws.pin()
    engine.transition(ws.repo, TO_REVIEW)  # through the library: a refusal is a new line
    stale, moved = pinned(ws), tip(ws)
    assert stale != moved + "\n"
    history = run(ws, "history", stdin={"resource_id": "pin:1"})
    assert history.returncode == 0 and history.stderr == ""
    wrong = run(ws, "transition", stdin={**TO_REVIEW, "from_state": "review"})
    assert wrong.returncode == 1 and tip(ws) == moved
    assert pinned(ws) == stale and "notes-tip" not in wrong.stderr  # no move, no write
    ws.commit({"NOTES.md": "n\n"})
    applied = run(ws, "transition", stdin=TO_REVIEW)
    assert json.loads(applied.stdout)["status"] == "applied"
    assert pinned(ws) == tip(ws) + "\n" and "now pins" in applied.stderr


def test_without_a_pin_in_the_work_tree_a_write_creates_none(ws: Workspace) -> None:
    reg = run(ws, "register", stdin=REGISTER)
    assert reg.returncode == 0 and reg.stderr == ""
    assert not (ws.root / pin.PIN_PATH).exists()


def test_the_pin_only_follows_forward(ws: Workspace) -> None:
    engine.register(ws.repo, REGISTER)
    ws.pin()
    old = tip(ws)
    git(ws.root, "update-ref", "-d", store.REF)  # the notes start over: the pin is not theirs
    reg = run(ws, "register", stdin=REGISTER)
    assert reg.returncode == 0
    assert pinned(ws) == old + "\n"
    assert f"{pin.PIN_PATH} not updated: the guard notes at {tip(ws)[:12]} do not descend" in reg.stderr
    assert reg.stderr.count("\n") == 1


def test_a_symlinked_pin_is_never_written_or_read_through(ws: Workspace, tmp_path: Path) -> None:
    """A branch can commit the pin as a link to any file of whoever checks it out."""
    victim = tmp_path / "authorized_keys"
    victim.write_text("ssh-ed25519 AAAA mine\n")
    (ws.root / ".vivary/guard").mkdir(parents=True)
    os.symlink(victim, ws.root / pin.PIN_PATH)
    commit_all(ws.root, "the pin is a link")
    reg = run(ws, "register", stdin=REGISTER)
    assert reg.returncode == 0 and "refusing to write through a symlink" in reg.stderr
    by_hand = run(ws, "pin")
    assert by_hand.returncode == 1 and by_hand.stderr.count("\n") == 1
    assert "pin_unsafe" in by_hand.stderr and "not touched" in by_hand.stderr
    check = run(ws, "pin", "--check")
    assert check.returncode == 1 and "symlink" in check.stderr
    assert victim.read_text() == "ssh-ed25519 AAAA mine\n"
    assert (ws.root / pin.PIN_PATH).is_symlink()


def test_check_says_current_stale_missing_or_invalid(ws: Workspace) -> None:
    missing = run(ws, "pin", "--check")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == (f"strato guard: pin not current: there is no {pin.PIN_PATH}: "
                              f"run `{pin.FIX}`\n")
    engine.register(ws.repo, REGISTER)
    ws.pin()
    current = run(ws, "pin", "--check", "--json")
    assert current.returncode == 0 and current.stderr == ""
    assert json.loads(current.stdout) == {
        "path": pin.PIN_PATH, "pinned": tip(ws), "notes_tip": tip(ws), "state": "current",
        "current": True, "reason": None,
    }
    before = tip(ws)
    engine.transition(ws.repo, TO_REVIEW)
    stale = run(ws, "pin", "--check", "--json")
    assert stale.returncode == 1 and stale.stderr.count("\n") == 1
    doc = json.loads(stale.stdout)
    assert doc["state"] == "stale" and doc["current"] is False and doc["pinned"] == before
    assert doc["reason"] == (f"the pin names notes commit {before[:12]} but the guard notes are at "
                             f"{tip(ws)[:12]}: run `{pin.FIX}`")
    (ws.root / pin.PIN_PATH).write_text("\x1b]0;owned\x07\n")
    invalid = run(ws, "pin", "--check")
    assert invalid.returncode == 1 and "\x1b" not in invalid.stderr and "neither a commit id" in invalid.stderr
    assert (ws.root / pin.PIN_PATH).read_text() == "\x1b]0;owned\x07\n"  # --check writes nothing


def test_check_tells_a_clone_that_lacks_the_pinned_notes_to_fetch(ws: Workspace) -> None:
    engine.register(ws.repo, REGISTER)
    ws.pin()
    git(ws.root, "update-ref", "-d", store.REF)
    behind = run(ws, "pin", "--check", "--json")
    assert behind.returncode == 1 and json.loads(behind.stdout)["state"] == "behind"
    assert f"git fetch origin {store.REF}:{store.REF}" in behind.stderr


def test_check_outside_a_repository_is_a_usage_error(tmp_path: Path) -> None:
    bare = tmp_path / "plain"
    bare.mkdir()
    proc = run(bare, "pin", "--check")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_judge_tells_the_ways_a_pin_differs(ws: Workspace) -> None:
    engine.register(ws.repo, REGISTER)
    first = tip(ws)
    engine.transition(ws.repo, {**TO_REVIEW, "to_state": "review"})
    second = tip(ws)
    repo = ws.repo
    assert pin.judge(repo, second).kind == "current"
    assert pin.judge(repo, first).kind == "stale"
    assert pin.judge(repo, pin.NONE).kind == "stale"
    assert pin.judge(repo, "f" * 40).kind == "behind"
    assert pin.judge(repo, None).kind == "missing"
    assert pin.judge(repo, "HEAD").kind == "invalid"
    anchor = git(ws.root, "notes", "--ref=vivary/guard", "list").split()[1]
    git(ws.root, "update-ref", store.REF, first)
    forked = put_ledger(ws, anchor, "rewritten\n")  # a sibling of `second`
    assert pin.judge(repo, second).kind == "diverged"
    git(ws.root, "update-ref", store.REF, first)
    assert pin.judge(repo, second).kind == "behind" and forked != second
