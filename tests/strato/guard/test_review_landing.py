"""Review judges what the base pins once the head lands (issue 27), in process: a head
whose notes forked from an older base pin is judged on the union of both pins' notes;
notes that do not merge are one break naming the command that re-appends."""

from __future__ import annotations

import copy

import pytest

from strato.guard import engine, pin, store, union
from strato.guard.errors import GuardError
from strato.guard.review import review
from tests.support.guard import POLICY, Key, Workspace
from tests.support.repos import git


def _tip(ws: Workspace) -> str:
    return git(ws.root, "rev-parse", store.REF).strip()


def _register(ws: Workspace, rid: str) -> None:
    engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})


def _to_review(ws: Workspace, rid: str) -> None:
    engine.transition(ws.repo, {"resource_id": rid, "from_state": "draft", "to_state": "review"})


def _forked(ws: Workspace, key: Key, same_ledger: bool) -> tuple[str, str, str]:
    """main pins one ledger; PR ``a`` and PR ``b`` each branch from it and write notes
    forked from main's pin (another ledger each, or one more line on main's ledger each);
    ``a`` merges first. Returns main after the merge, its pin (a's notes) and b's pin."""
    ws.trust(key.signers_line("alice@example.com"))
    ws.commit({"NOTES.md": "n\n"}, "main: notes")
    _register(ws, "land:0")
    ws.pin("main: pins land:0")
    forked = _tip(ws)
    git(ws.root, "checkout", "-q", "-b", "a")
    _to_review(ws, "land:0") if same_ledger else _register(ws, "land:a")
    ws.pin("a: pins its notes")
    pinned_a = _tip(ws)
    git(ws.root, "checkout", "-q", "-b", "b", "main")
    git(ws.root, "update-ref", store.REF, forked)  # b's clone never saw a's notes
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    _to_review(ws, "land:0") if same_ledger else _register(ws, "land:b")
    ws.pin("b: pins its notes")
    pinned_b = _tip(ws)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge a", "a")
    return git(ws.root, "rev-parse", "HEAD").strip(), pinned_a, pinned_b


def test_a_head_whose_notes_forked_before_another_pr_landed_is_judged_on_the_union(
    ws: Workspace, key: Key
) -> None:
    """a landed first; b's notes do not descend from main's pin any more, but merge with
    it: b needs no re-pin, its review passes and shows b's entry alone."""
    base, _, _ = _forked(ws, key, same_ledger=False)
    report = review(ws.repo, base, "b")
    assert report.ok, [str(b) for b in report.verify.breaks]
    assert [(row.resource_id, row.line, row.kind) for row in report.rows] == [("land:b", 1, "register")]


def test_notes_that_do_not_merge_with_the_base_pin_name_the_reappend(ws: Workspace, key: Key) -> None:
    """a and b both appended to main's ledger: the hash chain orders them, so b's review
    fails with the one command that re-appends b's line after a's."""
    base, pinned_a, pinned_b = _forked(ws, key, same_ledger=True)
    with pytest.raises(GuardError) as caught:
        union.merge(ws.repo, pinned_a, pinned_b)
    report = review(ws.repo, base, "b")
    assert not report.ok
    assert [str(b) for b in report.verify.breaks] == [
        f"{store.REF} does not descend from the base's notes commit {pinned_a[:12]} (rewritten or force-pushed)",
        f"{store.REF} does not descend from the base's notes commit {pinned_a[:12]} nor merge with it: "
        f"{caught.value.message}",
    ]


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("<<<<<<< ours\nnone\n=======\nnone\n>>>>>>> theirs\n", f"holds merge conflict markers: run `{pin.RESOLVE}`"),
        ("HEAD\n", f"is not a commit id: run `{pin.FIX}`"),
    ],
)
def test_a_head_pin_that_names_no_commit_says_how_to_fix_it(
    ws: Workspace, key: Key, written: str, why: str
) -> None:
    """A merge made without the driver leaves conflict markers in the head's pin; a pin
    edited by hand may name anything. Either is refused with the command that fixes it."""
    ws.trust(key.signers_line("alice@example.com"))
    base = ws.pin("main: no ledgers yet")
    git(ws.root, "checkout", "-q", "-b", "bad")
    ws.commit({pin.PIN_PATH: written}, "bad: pin")
    with pytest.raises(GuardError) as caught:
        review(ws.repo, base)
    assert (caught.value.error_type, caught.value.message) == ("review_unpinned", f"the head's {pin.PIN_PATH} {why}")


def test_a_head_pin_naming_a_commit_this_clone_lacks_names_the_fetch(ws: Workspace, key: Key) -> None:
    """The head pins notes never fetched here (a CI clone that fetched the branch only)."""
    ws.trust(key.signers_line("alice@example.com"))
    base = ws.pin("main: no ledgers yet")
    git(ws.root, "checkout", "-q", "-b", "far")
    missing = "0123456789abcdef" * 2 + "01234567"
    ws.commit({pin.PIN_PATH: missing + "\n"}, "far: pins notes fetched nowhere")
    with pytest.raises(GuardError) as caught:
        review(ws.repo, base)
    assert (caught.value.error_type, caught.value.message) == (
        "review_unpinned",
        f"the head's notes commit {missing[:12]} is not in this clone (run {pin.FETCH}); "
        "if the remote no longer has it, the notes ref was rewritten",
    )
