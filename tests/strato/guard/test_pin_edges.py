"""`strato guard pin`'s edges the mutation run of issue 27 found unpinned: a remote base
pinning nothing or garbage, a detached HEAD, a base pin left in conflict, and the notes
commit verified being the one pinned (not the notes ref)."""

from __future__ import annotations

import copy

import pytest

from strato.guard import engine, pin, store, verify
from strato.guard.errors import GuardError
from tests.support.guard import POLICY, Workspace, anchor, ledger_text, put_ledger
from tests.support.repos import git
from tropo.git import repo as gitrepo

ORIGIN_MAIN = "refs/remotes/origin/main"


def _origin_main_pins(ws: Workspace, text: str | None) -> None:
    """origin's copy of main, as last fetched, is a commit whose pin file holds ``text``
    (None: the commit has no pin file)."""
    path = ws.root / pin.PIN_PATH
    if text is None:
        path.unlink(missing_ok=True)
        ws.commit({"unpinned.txt": "x\n"}, "no pin")
    else:
        ws.commit({pin.PIN_PATH: text}, "pin")
    git(ws.root, "update-ref", ORIGIN_MAIN, "HEAD")


def test_pin_from_a_remote_base_pinning_nothing_or_garbage(ws: Workspace) -> None:
    assert pin.chosen(ws.repo, "origin", "main") is None  # origin's main never fetched
    _origin_main_pins(ws, None)
    assert pin.chosen(ws.repo, "origin", "main") is None
    _origin_main_pins(ws, f"{pin.NONE}\n")
    assert pin.chosen(ws.repo, "origin", "main") is None
    _origin_main_pins(ws, "not a commit\n")
    with pytest.raises(GuardError) as refused:
        pin.chosen(ws.repo, "origin", "main")
    assert (refused.value.error_type, refused.value.message) == (
        "pin_refused", f"{ORIGIN_MAIN} pins something that is not a commit id: not pinned")


def test_pin_on_a_detached_head_names_the_base_to_pass(ws: Workspace) -> None:
    git(ws.root, "checkout", "-q", "--detach")
    with pytest.raises(GuardError) as refused:
        pin.chosen(ws.repo, "origin", None)
    assert (refused.value.error_type, refused.value.message) == (
        "invalid_usage", "HEAD is detached: name the base branch with --base")


def test_a_base_pin_left_in_conflict_says_how_to_resolve_it(ws: Workspace) -> None:
    text = f"<<<<<<< ours\n{'a' * 40}\n=======\n{'b' * 40}\n>>>>>>> theirs\n"
    base = gitrepo.resolve_commit(ws.repo, ws.commit({pin.PIN_PATH: text}, "a pin left in conflict"))
    with pytest.raises(GuardError) as info:
        pin.read(base)
    assert (info.value.error_type, info.value.message) == (
        "review_unpinned",
        f"{pin.PIN_PATH} at base {str(base.id)[:12]} holds merge conflict markers: run `{pin.RESOLVE}`",
    )


def test_pin_verifies_the_notes_commit_it_pins_not_the_notes_ref(ws: Workspace) -> None:
    engine.register(ws.repo, {"resource_id": "pin:1", **copy.deepcopy(POLICY)})
    good = git(ws.root, "rev-parse", store.REF).strip()
    text = ledger_text(ws, anchor("pin:1"))
    bad = put_ledger(ws, anchor("pin:1"), text.replace('"initial":"draft"', '"initial":"released"'))
    assert pin.verified(ws.repo, good) == good  # the ref is at the tampered commit now
    with pytest.raises(GuardError) as refused:
        pin.verified(ws.repo, str(bad))
    first = verify.verify_repository(ws.repo, at=str(bad)).breaks[0]
    assert (refused.value.error_type, refused.value.message) == (
        "pin_refused", f"notes commit {str(bad)[:12]} fails verify ({first}): not pinned")


def test_a_pin_left_in_conflict_is_told_to_resolve_not_re_pin() -> None:
    assert pin.State("invalid", "<<<<<<< HEAD", None).reason() == (
        f"the pin ({pin.PIN_PATH}) holds merge conflict markers: run `{pin.RESOLVE}`"
    )
