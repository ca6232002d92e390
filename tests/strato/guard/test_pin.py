"""The notes pin kept current for honest contributors: guard writes move it forward in the
work tree, `strato guard pin --check` says whether it is current; never through a symlink."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pygit2
import pytest

from strato.guard import engine, pin, store
from strato.guard.errors import GuardError
from tests.support.guard import POLICY, Workspace, put_ledger, run
from tests.support.repos import commit_all, git
from tropo.git import repo as gitrepo

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


def test_a_write_takes_in_the_notes_its_pin_names_first(ws: Workspace) -> None:
    """A clone without the notes its branch pins (a fresh clone, a deleted ref): the write
    starts from them, so the pin follows forward and names a descendant."""
    engine.register(ws.repo, REGISTER)
    ws.pin()
    old = tip(ws)
    git(ws.root, "update-ref", "-d", store.REF)
    step = run(ws, "transition", stdin=TO_REVIEW)  # refused (no NOTES.md), and recorded
    assert f"the guard notes took in notes commit {old[:12]}" in step.stderr
    assert pinned(ws) == tip(ws) + "\n" and git(ws.root, "rev-parse", f"{tip(ws)}^").strip() == old


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
    assert pin.judge(repo, second) == pin.State("current", second, second)
    assert pin.judge(repo, first) == pin.State("stale", first, second)
    assert pin.judge(repo, pin.NONE) == pin.State("stale", pin.NONE, second)
    assert pin.judge(repo, "f" * 40) == pin.State("behind", "f" * 40, second)
    assert pin.judge(repo, None) == pin.State("missing", None, second)
    assert pin.judge(repo, "HEAD") == pin.State("invalid", "HEAD", second)
    anchor = git(ws.root, "notes", "--ref=vivary/guard", "list").split()[1]
    git(ws.root, "update-ref", store.REF, first)
    forked = put_ledger(ws, anchor, "rewritten\n")  # a sibling of `second`
    assert pin.judge(repo, second) == pin.State("diverged", second, forked)
    git(ws.root, "update-ref", store.REF, first)
    assert pin.judge(repo, second) == pin.State("behind", second, first) and forked != second


# -- in process: each function's answer and message, exactly ----------------------------


def test_the_pin_text_and_the_work_tree_pin_as_written(ws: Workspace) -> None:
    repo = ws.repo
    assert pin.text(None) == "none\n" and pin.text("a" * 40) == "a" * 40 + "\n"
    assert pin.read_worktree(repo) is None
    assert pin.write(repo) is None and pinned(ws) == "none\n"
    engine.register(repo, REGISTER)
    assert pin.write(repo) == tip(ws) and pinned(ws) == tip(ws) + "\n"
    assert pin.read_worktree(repo) == tip(ws)
    (ws.root / pin.PIN_PATH).write_bytes(b" x\xff" + b"y" * 1000)
    assert pin.read_worktree(repo) == "x\ufffd" + "y" * (pin.MAX_PIN - 3)  # read no further


def test_a_symlinked_pin_is_refused_in_process_with_the_path(ws: Workspace, tmp_path: Path) -> None:
    (ws.root / pin.PIN_PATH).parent.mkdir(parents=True)
    os.symlink(tmp_path / "victim", ws.root / pin.PIN_PATH)
    message = f"{pin.PIN_PATH}: refusing to write through a symlink: {pin.PIN_PATH}; not touched"
    for call in (pin.write, pin.read_worktree):
        try:
            call(ws.repo)
        except GuardError as exc:
            assert (exc.error_type, exc.message) == ("pin_unsafe", message)
        else:
            raise AssertionError(f"{call.__name__} went through the link")
    assert pin.follow(ws.repo) == message
    assert not (tmp_path / "victim").exists()


def test_each_state_says_why_and_how_to_fix_it() -> None:
    a, b = "a" * 40, "b" * 40
    fix = f"run `strato guard pin --from local && git add {pin.PIN_PATH}`"
    assert pin.State("current", a, a).reason() is None
    assert pin.State("missing", None, a).reason() == f"there is no {pin.PIN_PATH}: {fix}"
    assert pin.State("invalid", "HEAD", None).reason("the base's pin") == (
        f"the base's pin ({pin.PIN_PATH}) is neither a commit id nor `none`: {fix}"
    )
    assert pin.State("stale", a, b).reason() == (
        f"the pin names notes commit {a[:12]} but the guard notes are at {b[:12]}: {fix}"
    )
    assert pin.State("stale", "none", None).reason() == (
        f"the pin names notes commit none but the guard notes are at none: {fix}"
    )
    assert pin.State("behind", a, None).reason() == (
        f"the pin names notes commit {a[:12]}, which the guard notes here (at none) do not "
        f"contain: run `git fetch origin {store.REF}:{store.REF}`"
    )
    assert pin.State("diverged", a, b).reason() == (
        f"the guard notes at {b[:12]} do not descend from notes commit {a[:12]} that the pin "
        "names (the notes ref was reset, or another clone appended): re-pin only if that is "
        f"intended: `strato guard pin --from local && git add {pin.PIN_PATH}`"
    )


def test_follow_moves_only_a_stale_pin_forward(ws: Workspace) -> None:
    repo = ws.repo
    assert pin.follow(repo) is None  # no pin: the project does not pin
    pin.write(repo)
    assert pin.follow(repo) is None  # current
    engine.register(repo, REGISTER)  # follows by itself; undo that to see follow do it
    (ws.root / pin.PIN_PATH).write_text("none\n")
    assert pin.follow(repo) == (
        f"{pin.PIN_PATH} now pins notes commit {tip(ws)[:12]}: commit it with your change"
    )
    assert pinned(ws) == tip(ws) + "\n"
    (ws.root / pin.PIN_PATH).write_text("f" * 40 + "\n")
    behind = pin.judge(repo, "f" * 40).reason()
    assert pin.follow(repo) == f"{pin.PIN_PATH} not updated: {behind}"
    assert pinned(ws) == "f" * 40 + "\n"
    (ws.root / pin.PIN_PATH).write_text("HEAD\n")
    assert pin.follow(repo) == f"{pin.PIN_PATH} not updated: {pin.judge(repo, 'HEAD').reason()}"


def test_follow_in_a_bare_repository_does_nothing(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "b.git")
    assert pin.follow(gitrepo.require(tmp_path / "b.git")) is None


def test_a_base_pin_is_read_strictly_and_fails_closed_with_the_fix(ws: Workspace) -> None:
    def at(text: str | bytes) -> pygit2.Commit:
        (ws.root / pin.PIN_PATH).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / pin.PIN_PATH).write_bytes(text if isinstance(text, bytes) else text.encode())
        return gitrepo.resolve_commit(ws.repo, commit_all(ws.root, "pin"))

    base = gitrepo.resolve_commit(ws.repo, "HEAD")
    where = str(base.id)[:12]
    assert pin.read_or_none(base) is None
    with pytest.raises(GuardError) as info:
        pin.read(base)
    assert (info.value.error_type, info.value.message) == (
        "review_unpinned",
        f"base {where} has no {pin.PIN_PATH}: run `strato guard pin` on the base branch and "
        "commit it, or pass --base-notes REV (a notes commit your CI keeps)",
    )
    assert pin.read(at(" none \n")) is None
    sha = "c" * 40
    assert pin.read(at(sha + "\n")) == sha and pin.read_or_none(at(f" {sha}\n")) == sha
    binary = at(b"\xff\n")
    assert pin.read_or_none(binary) == "\ufffd"  # not UTF-8: shown, never a crash
    bad = at("C" * 40 + "\n")
    assert pin.read_or_none(bad) == "C" * 40
    for wrong in (bad, binary):
        with pytest.raises(GuardError) as info:
            pin.read(wrong)
        assert (info.value.error_type, info.value.message) == (
            "review_unpinned",
            f"{pin.PIN_PATH} at base {str(wrong.id)[:12]} is not a commit id",
        )


def test_a_base_notes_commit_must_be_in_this_clone(ws: Workspace) -> None:
    engine.register(ws.repo, REGISTER)
    assert pin.require_commit(ws.repo, tip(ws)[:12]) == tip(ws)
    with pytest.raises(GuardError) as info:
        pin.require_commit(ws.repo, "d" * 40)
    assert (info.value.error_type, info.value.message) == (
        "review_unpinned",
        f"the base's notes commit {'d' * 12} is not in this clone (run {pin.FETCH}); "
        "if the remote no longer has it, the notes ref was rewritten",
    )
