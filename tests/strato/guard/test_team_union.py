"""The union of two guard notes histories (:mod:`strato.guard.union`) on the ledgers a
team meets besides the current layout (issue 27's mutation run found them untested): a
ledger still kept as one note (an older release's), an unreadable ledger, a ledger
written without its running state, and notes git has fanned out into ``aa/bbbb…``."""

from __future__ import annotations

import pygit2
import pytest

from strato.guard import layout, running, store, union
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from tests.support.guard import Workspace, anchor, ledger_text, put_ledger, refused_tip, register_tip
from tests.support.repos import git
from tropo.git import notes


def _kept(ws: Workspace, tip: str | None, rid: str) -> layout.Stored:
    return {k.anchor: k for k in store.ledgers(ws.repo, tip)}[anchor(rid)]


def _commit(ws: Workspace, tree: pygit2.Oid, parents: list[str]) -> str:
    """A notes commit of ``tree``, the notes ref left where it was."""
    return notes.make_commit(ws.repo, parents, tree, "hand-made notes\n")


def _older_release(ws: Workspace, rid: str, text: str) -> str:
    """A notes history of its own holding ``rid``'s ledger as an older release kept it:
    the whole ledger as one note, no line blobs, no running state."""
    blob = ws.repo.create_blob(text.encode())
    return _commit(ws, notes.insert(ws.repo, None, [anchor(rid)], blob), [])


def _fanned(ws: Workspace, tip: str, rid: str) -> str:
    """``tip`` with ``rid``'s note moved to ``aa/bbbb…``, as git notes does in a large
    notes tree (a child of ``tip``)."""
    repo, at = ws.repo, anchor(rid)
    tree = notes.tree_of(repo, tip)
    assert tree is not None and at in tree
    top = repo.TreeBuilder(tree)
    top.remove(at)
    sub = repo.TreeBuilder()
    sub.insert(at[2:], tree[at].id, pygit2.GIT_FILEMODE_BLOB)
    top.insert(at[:2], sub.write(), pygit2.GIT_FILEMODE_TREE)
    return _commit(ws, top.write(), [tip])


def test_an_older_releases_ledger_that_extends_the_other_side_is_kept(ws: Workspace) -> None:
    """Their side has two lines as line blobs, ours the same two and a third as one note:
    ours covers theirs byte for byte, so the union keeps ours and raises nothing."""
    register_tip(ws, "old:1")
    theirs = refused_tip(ws, "old:1")
    refused_tip(ws, "old:1")
    text = ledger_text(ws, anchor("old:1"))
    ours = _older_release(ws, "old:1", text)
    merged = union.merge(ws.repo, ours, theirs)
    assert merged not in (None, ours, theirs)
    kept = _kept(ws, merged, "old:1")
    assert kept.legacy and kept.problem is None and kept.data == text.encode()


def test_an_older_releases_longer_ledger_is_taken_as_line_blobs(ws: Workspace) -> None:
    """Ours keeps two lines as line blobs (a migrated clone), theirs the same two and a
    third as one note (an older release): the union takes theirs in our layout, the
    bytes unchanged and our running state (true of two lines) gone, so the merged
    ledger loads with all three entries instead of reading as broken."""
    register_tip(ws, "old:3")
    ours = refused_tip(ws, "old:3")
    refused_tip(ws, "old:3")
    text = ledger_text(ws, anchor("old:3"))
    theirs = _older_release(ws, "old:3", text)
    assert _kept(ws, ours, "old:3").running is not None
    merged = union.merge(ws.repo, ours, theirs)
    kept = _kept(ws, merged, "old:3")
    assert not kept.legacy and kept.problem is None and kept.data == text.encode() and kept.lines == 3
    assert kept.running is None
    loaded = store.load(ws.repo, "old:3", merged)
    assert loaded.lines == 3 and loaded.state is not None and not loaded.legacy
    report = verify_repository(ws.repo, at=merged)
    assert report.ok, report.to_json()


def test_an_older_releases_ledger_that_grew_differently_is_a_conflict(ws: Workspace) -> None:
    """Ours has two lines as line blobs; theirs, one note, shares the first and then has a
    line of its own: neither covers the other, whatever the layouts."""
    register_tip(ws, "old:2")
    one = ledger_text(ws, anchor("old:2"))
    ours = refused_tip(ws, "old:2")
    two = ledger_text(ws, anchor("old:2"))
    theirs = _older_release(ws, "old:2", one + two[len(one):].replace("review", "released"))
    for left, right in ((ours, theirs), (theirs, ours)):
        with pytest.raises(GuardError) as caught:
            union.merge(ws.repo, left, right)
        assert caught.value.error_type == "notes_conflict" and "'old:2'" in caught.value.message


@pytest.mark.parametrize("broken_side", ["ours", "theirs"])
def test_an_unreadable_ledger_covers_nothing_and_is_covered_by_nothing(ws: Workspace, broken_side: str) -> None:
    """A side whose note on the ledger is not the layout's marker holds no readable ledger
    for it: the union refuses to pick a side (a conflict) instead of keeping either."""
    base = register_tip(ws, "bad:1")
    good = refused_tip(ws, "bad:1")
    repo = ws.repo  # one handle: a tree is read through the repository that found it
    junk = repo.create_blob(b"not the marker\n")
    broken = _commit(ws, notes.insert(repo, notes.tree_of(repo, base), [anchor("bad:1")], junk), [base])
    assert _kept(ws, broken, "bad:1").problem is not None
    ours, theirs = (broken, good) if broken_side == "ours" else (good, broken)
    with pytest.raises(GuardError) as caught:
        union.merge(ws.repo, ours, theirs)
    assert caught.value.error_type == "notes_conflict"


def test_a_ledger_written_without_its_running_state_is_taken_without_one(ws: Workspace) -> None:
    """Theirs holds a ledger (written by a tool that keeps no running state) ours lacks:
    it is taken, line blobs and note, and no state appears for it."""
    register_tip(ws, "state:theirs")
    theirs = put_ledger(ws, anchor("state:theirs"), ledger_text(ws, anchor("state:theirs")))
    assert _kept(ws, theirs, "state:theirs").running is None
    git(ws.root, "update-ref", "-d", store.REF)
    ours = register_tip(ws, "state:ours")
    merged = union.merge(ws.repo, ours, theirs)
    kept = _kept(ws, merged, "state:theirs")
    assert kept.problem is None and kept.lines == 1 and kept.running is None
    assert _kept(ws, merged, "state:ours").running is not None
    tree = notes.tree_of(ws.repo, merged)
    assert tree is not None and anchor("state:theirs") not in tree[running.STATE]


def test_a_fanned_out_note_is_taken_from_where_it_is(ws: Workspace) -> None:
    """Theirs keeps the ledger's note under ``aa/``: the union finds it there, so the
    ledger it takes is readable (its marker note is not left behind)."""
    theirs = _fanned(ws, register_tip(ws, "fan:theirs"), "fan:theirs")
    git(ws.root, "update-ref", "-d", store.REF)
    ours = register_tip(ws, "fan:ours")
    merged = union.merge(ws.repo, ours, theirs)
    kept = _kept(ws, merged, "fan:theirs")
    assert kept.problem is None and kept.lines == 1
    assert notes.read(ws.repo, merged, anchor("fan:theirs")) == layout.marker(anchor("fan:theirs"))


def test_a_note_ours_keeps_fanned_out_is_replaced_where_it_is(ws: Workspace) -> None:
    """Ours keeps the ledger's note under ``aa/``, theirs extends the ledger: the note
    taken lands where ours has it, so no object gets two notes."""
    base = register_tip(ws, "fan:both")
    theirs = refused_tip(ws, "fan:both")
    ours = _fanned(ws, base, "fan:both")
    merged = union.merge(ws.repo, ours, theirs)
    assert notes.duplicated(ws.repo, merged) == []
    kept = _kept(ws, merged, "fan:both")
    assert kept.problem is None and kept.lines == 2


def test_a_longer_ledger_in_line_blobs_is_taken_with_its_running_state(ws: Workspace) -> None:
    """Both sides keep the ledger as line blobs, theirs one line longer: the union takes
    theirs with their running state (true of the longer ledger), not none."""
    base = register_tip(ws, "st:both")
    theirs = refused_tip(ws, "st:both")
    git(ws.root, "update-ref", store.REF, base)
    ours = register_tip(ws, "st:ours")  # ours diverges: a ledger of its own
    want = _kept(ws, theirs, "st:both").running
    assert want
    merged = union.merge(ws.repo, ours, theirs)
    kept = _kept(ws, merged, "st:both")
    assert not kept.legacy and kept.lines == 2 and kept.running == want


def test_an_older_releases_ledger_ours_lacks_is_taken_as_its_note(ws: Workspace) -> None:
    """Theirs holds a ledger as an older release's one note, ours has no such ledger: the
    union takes it as theirs has it (the note), not rewritten as line blobs."""
    register_tip(ws, "old:6")
    text = ledger_text(ws, anchor("old:6"))
    theirs = _older_release(ws, "old:6", text)
    git(ws.root, "update-ref", "-d", store.REF)
    ours = register_tip(ws, "new:6")
    merged = union.merge(ws.repo, ours, theirs)
    kept = _kept(ws, merged, "old:6")
    assert kept.legacy and kept.problem is None and kept.data == text.encode()


def test_an_older_releases_longer_ledger_taken_keeps_our_other_ledgers(ws: Workspace) -> None:
    """As the test above, with ours holding a second ledger theirs lacks: taking the older
    release's ledger rewrites ours in place and drops nothing else."""
    register_tip(ws, "old:5")
    refused_tip(ws, "old:5")
    ours = register_tip(ws, "mine:5")
    refused_tip(ws, "old:5")
    text = ledger_text(ws, anchor("old:5"))
    theirs = _older_release(ws, "old:5", text)
    merged = union.merge(ws.repo, ours, theirs)
    held = {k.anchor: k.lines for k in store.ledgers(ws.repo, merged)}
    assert held == {anchor("old:5"): 3, anchor("mine:5"): 1}
    assert _kept(ws, merged, "mine:5").running == _kept(ws, ours, "mine:5").running
    report = verify_repository(ws.repo, at=merged)
    assert report.ok, report.to_json()


def test_an_entry_taken_from_their_side_keeps_its_mode(ws: Workspace) -> None:
    """Theirs keeps a ledger's running state as an executable blob (hand-made): the
    union takes the entry with the mode theirs gives it, not a mode of its own."""
    repo = ws.repo  # one handle: a tree is read through the repository that found it
    tip = register_tip(ws, "mode:theirs")
    at = anchor("mode:theirs")
    tree = notes.tree_of(repo, tip)
    assert tree is not None
    states = repo.TreeBuilder(tree[running.STATE])
    states.insert(at, tree[running.STATE][at].id, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)
    top = repo.TreeBuilder(tree)
    top.insert(running.STATE, states.write(), pygit2.GIT_FILEMODE_TREE)
    theirs = _commit(ws, top.write(), [tip])
    git(ws.root, "update-ref", "-d", store.REF)
    ours = register_tip(ws, "mode:ours")
    merged = union.merge(repo, ours, theirs)
    held = notes.tree_of(repo, merged)
    assert held is not None
    assert held[running.STATE][at].filemode == pygit2.GIT_FILEMODE_BLOB_EXECUTABLE
