"""A clone's notes ref taking in other notes in process (issue 27's mutation run reached
none of it): :func:`team.join_pinned` before a write (the work tree pins notes the ref
lacks) and :func:`team.merge_pins` moving the ref along with a merged pin."""

from __future__ import annotations

from pathlib import Path

import pytest

from strato.guard import pin, store, team
from strato.guard.errors import GuardError
from tests.support.guard import Workspace, anchor, refused_tip, register_tip
from tests.support.repos import git
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo


def _ref(ws: Workspace) -> str | None:
    return gitrefs.read_ref(ws.repo, store.REF)


def _anchors(ws: Workspace, tip: str | None) -> set[str]:
    return {kept.anchor for kept in store.ledgers(ws.repo, tip)}


def _pin(ws: Workspace, text: str) -> None:
    (ws.root / pin.PIN_PATH).parent.mkdir(parents=True, exist_ok=True)
    (ws.root / pin.PIN_PATH).write_text(text + "\n")


def _forked(ws: Workspace) -> tuple[str, str]:
    """Two notes commits with a ledger each, forked from none; the ref left on the second."""
    first = register_tip(ws, "join:a")
    git(ws.root, "update-ref", "-d", store.REF)
    return first, register_tip(ws, "join:b")


def _lock(ws: Workspace) -> Path:
    """Another process mid-write on the notes ref: git's lock file beside it."""
    lock = ws.root / ".git" / (store.REF + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    return lock


def test_a_pin_the_ref_lacks_is_taken_in_and_said_in_one_line(ws: Workspace) -> None:
    pinned, local = _forked(ws)
    _pin(ws, pinned)
    said = team.join_pinned(ws.repo)
    assert said == f"the guard notes took in notes commit {pinned[:12]} that {pin.PIN_PATH} names"
    joined = _ref(ws)
    assert joined not in (pinned, local) and _anchors(ws, joined) == {anchor("join:a"), anchor("join:b")}
    assert git(ws.root, "reflog", "show", "--format=%gs", "-1", store.REF).strip() == (
        "guard: take in the pinned notes")
    assert team.join_pinned(ws.repo) is None and _ref(ws) == joined  # the ref holds it now


def test_with_no_notes_ref_the_pinned_notes_become_it(ws: Workspace) -> None:
    pinned = register_tip(ws, "join:only")
    git(ws.root, "update-ref", "-d", store.REF)
    _pin(ws, pinned)
    assert team.join_pinned(ws.repo) is not None and _ref(ws) == pinned


@pytest.mark.parametrize("text", ["none", "garbage", "f" * 40, "current", "older"])
def test_a_pin_that_names_nothing_new_here_moves_nothing(ws: Workspace, text: str) -> None:
    """`none`, a pin that is not a commit id, notes this clone lacks, the ref's own tip
    and notes the ref already descends from: nothing to take in, nothing said."""
    older = register_tip(ws, "join:old")
    current = refused_tip(ws, "join:old")
    _pin(ws, {"current": current, "older": older}.get(text, text))
    assert team.join_pinned(ws.repo) is None and _ref(ws) == current


def test_no_pin_an_unsafe_pin_or_a_bare_clone_moves_nothing(ws: Workspace, tmp_path: Path) -> None:
    _, local = _forked(ws)
    assert team.join_pinned(ws.repo) is None  # no pin file
    (ws.root / pin.PIN_PATH).parent.mkdir(parents=True, exist_ok=True)
    (ws.root / pin.PIN_PATH).symlink_to(ws.root / "README.md")
    assert team.join_pinned(ws.repo) is None and _ref(ws) == local  # never read through a link
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(ws.root), str(bare))
    assert team.join_pinned(gitrepo.require(bare)) is None


def test_pinned_notes_that_do_not_merge_are_left_to_the_write(ws: Workspace) -> None:
    base = register_tip(ws, "join:one")
    pinned = refused_tip(ws, "join:one")
    git(ws.root, "update-ref", store.REF, base)
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    local = refused_tip(ws, "join:one")
    _pin(ws, pinned)
    assert team.join_pinned(ws.repo) is None and _ref(ws) == local


def test_a_join_that_loses_a_race_moves_nothing(ws: Workspace) -> None:
    pinned, local = _forked(ws)
    _pin(ws, pinned)
    _lock(ws)
    assert team.join_pinned(ws.repo) is None and _ref(ws) == local


def test_merged_pins_move_the_ref_forward_with_them(ws: Workspace) -> None:
    ours, theirs = _forked(ws)
    git(ws.root, "update-ref", store.REF, ours)
    merged = team.merge_pins(ws.repo, ours, theirs)
    assert merged not in (None, ours, theirs) and _ref(ws) == merged
    assert git(ws.root, "reflog", "show", "--format=%gs", "-1", store.REF).strip() == (
        "guard: merge pinned notes")


def test_merged_pins_join_the_refs_own_writes_and_never_drop_them(ws: Workspace) -> None:
    ours, theirs = _forked(ws)
    git(ws.root, "update-ref", "-d", store.REF)
    own = register_tip(ws, "join:own")
    merged = team.merge_pins(ws.repo, ours, theirs)
    assert merged is not None and _anchors(ws, merged) == {anchor("join:a"), anchor("join:b")}
    local = _ref(ws)
    assert local not in (own, merged)
    assert _anchors(ws, local) == {anchor("join:a"), anchor("join:b"), anchor("join:own")}


def test_merged_pins_leave_a_ref_whose_notes_conflict_with_them_as_it_is(ws: Workspace) -> None:
    """The pin is what the driver answers for: a ref that grew a ledger differently from
    the pins' union is merged (or refused) by the next sync."""
    ours, base = _forked(ws)
    theirs = refused_tip(ws, "join:b")
    git(ws.root, "update-ref", store.REF, base)
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    local = refused_tip(ws, "join:b")  # another second line of join:b's
    merged = team.merge_pins(ws.repo, ours, theirs)
    assert merged is not None and _anchors(ws, merged) == {anchor("join:a"), anchor("join:b")}
    assert _ref(ws) == local


def test_merged_pins_leave_a_ref_another_write_holds_as_it_is(ws: Workspace) -> None:
    ours, theirs = _forked(ws)
    _lock(ws)
    merged = team.merge_pins(ws.repo, ours, theirs)
    assert merged not in (None, theirs) and _ref(ws) == theirs


def test_merged_pins_of_none_are_none_and_a_side_this_clone_lacks_is_named(ws: Workspace) -> None:
    local = register_tip(ws, "join:kept")
    log = git(ws.root, "reflog", "show", store.REF)
    assert team.merge_pins(ws.repo, None, None) is None and _ref(ws) == local
    assert team.merge_pins(ws.repo, None, local) == local
    assert git(ws.root, "reflog", "show", store.REF) == log  # a ref that holds it is not rewritten
    for sides in (("f" * 40, local), (local, "e" * 40)):
        with pytest.raises(GuardError) as caught:
            team.merge_pins(ws.repo, *sides)
        missing = next(s for s in sides if s != local)
        assert caught.value.error_type == "review_unpinned"
        assert caught.value.message.startswith(f"a merged side's notes commit {missing[:12]} is not in this clone")
