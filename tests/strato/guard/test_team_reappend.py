"""`strato guard reappend` in process (:func:`reappend.reappend`; issue 27's mutation run
reached only its broken-ledger refusal): this clone's lines of one ledger re-derived on
the other side's notes, where it stops (a signed line, a step that no longer applies),
and what it refuses."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from strato.guard import engine, reappend, signedops, store
from strato.guard.errors import GuardError
from tests.support.guard import (
    POLICY,
    Key,
    Workspace,
    anchor,
    forge,
    ledger,
    refused_tip,
    register_tip,
    sign_override,
)
from tests.support.guard import RID as SIGNED_RID
from tests.support.repos import git
from tropo.git import refs as gitrefs
from tropo.git.refs import is_ancestor


def _ref(ws: Workspace) -> str | None:
    return gitrefs.read_ref(ws.repo, store.REF)


def _fork(ws: Workspace, base: str) -> None:
    """Back to ``base`` as the other clone's side would start (no reflog of the first)."""
    git(ws.root, "update-ref", store.REF, base)
    git(ws.root, "reflog", "expire", "--expire=now", "--all")


def _digests(ws: Workspace, rid: str) -> list[str]:
    return [entry["entry_digest"] for entry in ledger(ws, rid)]


def _diverged(ws: Workspace, rid: str, ours: int) -> tuple[str, list[str], str]:
    """``rid`` registered, then one line on their side and ``ours`` lines on this one:
    (their tip, their digests, this clone's tip)."""
    base = register_tip(ws, rid)
    theirs = refused_tip(ws, rid)
    kept = _digests(ws, rid)
    _fork(ws, base)
    for _ in range(ours):
        refused_tip(ws, rid)
    return theirs, kept, git(ws.root, "rev-parse", store.REF).strip()


def _answer(rid: str, onto: str, local: str, done: int, left: int, reason: str | None) -> dict[str, Any]:
    return {"status": "reappended" if reason is None else "stopped", "resource_id": rid, "onto": onto,
            "previous_tip": local, "reappended": done, "left": left, "reason": reason}


def test_this_sides_transitions_are_re_derived_after_theirs(ws: Workspace) -> None:
    theirs, kept, local = _diverged(ws, "re:two", 2)
    assert reappend.reappend(ws.repo, "re:two", theirs) == _answer("re:two", theirs, local, 2, 0, None)
    now = _ref(ws)
    assert now is not None and is_ancestor(ws.repo, theirs, now)
    entries = ledger(ws, "re:two")
    assert [e["entry_digest"] for e in entries[:2]] == kept and len(entries) == 4
    assert [e["kind"] for e in entries[2:]] == ["transition", "transition"]


def test_a_short_name_of_theirs_is_answered_with_the_full_one(ws: Workspace) -> None:
    theirs, _, local = _diverged(ws, "re:short", 1)
    assert reappend.reappend(ws.repo, "re:short", theirs[:12]) == _answer("re:short", theirs, local, 1, 0, None)


def test_lines_ahead_of_theirs_are_re_derived_on_top_of_them(ws: Workspace) -> None:
    """This side already holds their line and one more: only that one is re-derived."""
    register_tip(ws, "re:ahead")
    theirs = refused_tip(ws, "re:ahead")
    local = refused_tip(ws, "re:ahead")
    assert reappend.reappend(ws.repo, "re:ahead", theirs) == _answer("re:ahead", theirs, local, 1, 0, None)
    assert len(ledger(ws, "re:ahead")) == 3


def test_nothing_of_ours_past_theirs_leaves_the_ref_on_theirs(ws: Workspace) -> None:
    local = register_tip(ws, "re:none")
    theirs = refused_tip(ws, "re:none")
    _fork(ws, local)
    assert reappend.reappend(ws.repo, "re:none", theirs) == _answer("re:none", theirs, local, 0, 0, None)
    assert _ref(ws) == theirs


def test_this_sides_other_ledgers_ride_along_on_a_commit_over_theirs(ws: Workspace) -> None:
    theirs, _, _ = _diverged(ws, "re:kept", 1)
    local = register_tip(ws, "re:mine-only")
    reappend.reappend(ws.repo, "re:kept", theirs)
    now = _ref(ws)
    assert now is not None and is_ancestor(ws.repo, theirs, now)
    held = {kept.anchor for kept in store.ledgers(ws.repo, now)}
    assert held == {anchor("re:kept"), anchor("re:mine-only")} and local != now


def test_a_step_that_no_longer_applies_stops_there_with_its_reason(ws: Workspace) -> None:
    """Both sides moved draft->review: ours cannot follow theirs (the ledger is at review)."""
    (ws.root / "NOTES.md").write_text("n\n")
    move = {"resource_id": "re:moved", "from_state": "draft", "to_state": "review"}
    base = register_tip(ws, "re:moved")
    assert engine.transition(ws.repo, move)["status"] == "applied"
    theirs = _ref(ws)
    assert theirs is not None
    _fork(ws, base)
    assert engine.transition(ws.repo, move)["status"] == "applied"
    local = _ref(ws)
    assert local is not None
    found = reappend.reappend(ws.repo, "re:moved", theirs)
    assert found["status"] == "stopped" and found["reappended"] == 0 and found["left"] == 1
    assert found["reason"] is not None and found["reason"].startswith("line 2: ")


def test_a_signed_override_stops_the_run_and_asks_for_the_re_sign(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("alice@example.com"))
    base = register_tip(ws, SIGNED_RID)
    theirs = refused_tip(ws, SIGNED_RID)
    _fork(ws, base)
    (ws.root / "NOTES.md").write_text("n\n")
    engine.transition(ws.repo, {"resource_id": SIGNED_RID, "from_state": "draft", "to_state": "review"})
    signedops.override(ws.repo, sign_override(ws, key, "ship it"))
    local = _ref(ws)
    assert local is not None and [e["kind"] for e in ledger(ws, SIGNED_RID)][-1] == "deviation"
    reason = ("line 3 is a override: its signature covers the ledger head it was made at, so sign it "
              "again (`strato guard authorize`, then `strato guard override`)")
    found = reappend.reappend(ws.repo, SIGNED_RID, theirs)
    assert found == _answer(SIGNED_RID, theirs, local, 1, 1, reason)


def test_a_resource_with_no_ledger_on_a_side_is_refused(ws: Workspace) -> None:
    theirs = register_tip(ws, "re:theirs-only")
    git(ws.root, "update-ref", "-d", store.REF)
    local = register_tip(ws, "re:ours-only")
    for rid in ("re:theirs-only", "re:ours-only"):
        with pytest.raises(GuardError) as caught:
            reappend.reappend(ws.repo, rid, theirs)
        assert (caught.value.error_type, caught.value.message) == (
            "invalid_usage", f"{rid!r} has no ledger on both sides: nothing to re-append")
    assert _ref(ws) == local


def test_two_registrations_of_one_resource_are_refused(ws: Workspace) -> None:
    theirs = register_tip(ws, "re:twice")
    git(ws.root, "update-ref", "-d", store.REF)
    policy = {**copy.deepcopy(POLICY), "initial": "draft"}
    policy["graph"] = {**policy["graph"], "draft": ["review", "released"]}  # another register line
    engine.register(ws.repo, {"resource_id": "re:twice", **policy})
    local = _ref(ws)
    with pytest.raises(GuardError) as caught:
        reappend.reappend(ws.repo, "re:twice", theirs)
    assert (caught.value.error_type, caught.value.message) == (
        "notes_conflict", "both sides registered 're:twice': keep one side's ledger (a ledger has one register line)")
    assert _ref(ws) == local


def test_notes_this_clone_lacks_are_named(ws: Workspace) -> None:
    register_tip(ws, "re:missing")
    with pytest.raises(GuardError) as caught:
        reappend.reappend(ws.repo, "re:missing", "f" * 40)
    assert caught.value.error_type == "review_unpinned"
    assert caught.value.message.startswith(f"the other side's notes commit {'f' * 12} is not in this clone")


def test_with_nothing_to_re_derive_the_ref_is_theirs_plus_this_sides_other_ledgers(ws: Workspace) -> None:
    local_base = register_tip(ws, "re:only-theirs-grew")
    theirs = refused_tip(ws, "re:only-theirs-grew")
    _fork(ws, local_base)
    local = register_tip(ws, "re:riding")
    assert reappend.reappend(ws.repo, "re:only-theirs-grew", theirs)["reappended"] == 0
    tip = _ref(ws)
    assert tip is not None
    now = ws.repo[tip]
    assert [str(p) for p in now.parent_ids] == [theirs] and now.message == "guard: reappend onto the other side\n"
    assert {kept.anchor for kept in store.ledgers(ws.repo, tip)} == {
        anchor("re:only-theirs-grew"), anchor("re:riding")}
    assert local != tip


def test_a_re_append_that_cannot_sign_its_notes_commit_is_one_line_and_moves_nothing(ws: Workspace) -> None:
    theirs, _, _ = _diverged(ws, "re:unsigned", 1)
    register_tip(ws, "re:other")  # so the start is a commit of its own, not theirs
    local = git(ws.root, "rev-parse", store.REF).strip()
    for name, value in (("vivary.signNotes", "true"), ("gpg.format", "ssh"),
                        ("user.signingkey", str(ws.root / "no-such-key"))):
        git(ws.root, "config", name, value)
    with pytest.raises(GuardError) as caught:
        reappend.reappend(ws.repo, "re:unsigned", theirs)
    assert caught.value.error_type == "signing_failed"
    assert caught.value.message.startswith("cannot sign the notes commit: ")
    assert _ref(ws) == local


def test_a_line_of_a_kind_no_step_has_stops_the_run_there(ws: Workspace) -> None:
    """A hand-sealed line of ours whose kind is no step (a second register line: its
    chain holds, it does not fold) is never re-derived; the run stops and names it."""
    theirs, _, _ = _diverged(ws, "re:odd", 1)
    entries = ledger(ws, "re:odd")
    forge(ws, [*entries[:-1], {**entries[-1], "kind": "register"}], "re:odd")
    found = reappend.reappend(ws.repo, "re:odd", theirs)
    assert (found["status"], found["reappended"], found["left"]) == ("stopped", 0, 1)
    assert found["reason"] is not None and found["reason"].startswith("line 2 is a register: ")
