"""The ledger layout in git: one blob per line, bucketed; ledgers in the older one-note
layout still read, moved by their next append or by `strato guard migrate-store`; and
every way of editing the line blobs other than appending is a break."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from strato.guard import cache, engine, layout, ledger, ledgertrees, running, store
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from tests.support.guard import POLICY, Workspace, ledger_text, migrate_cli, put_ledger
from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs

STRATO = Path(sys.executable).with_name("strato")
RID = "svc:store"
ANCHOR = notes.anchor_id(store.anchor_content(RID))
MOVE = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
BACK = {"resource_id": RID, "from_state": "review", "to_state": "draft"}


def tip(ws: Workspace) -> str | None:
    return gitrefs.read_ref(ws.repo, store.REF)


@pytest.fixture
def moved(ws: Workspace) -> Workspace:
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    assert engine.transition(ws.repo, MOVE)["status"] == "applied"
    assert engine.transition(ws.repo, BACK)["status"] == "applied"
    assert verify_repository(ws.repo).ok
    return ws


def old_layout(ws: Workspace, text: str) -> None:
    """The ledger ``text`` as today's release writes it: the whole ledger as one git note,
    grown by appends (written with git notes itself), on a fresh notes ref. The anchor
    blob is in the object store already (the engine wrote it)."""
    git(ws.root, "update-ref", "-d", store.REF)
    lines = text.splitlines(keepends=True)
    note = ws.tmp / "ledger.txt"
    for n in (1, len(lines)):
        note.write_text("".join(lines[:n]))
        git(ws.root, "notes", "--ref=vivary/guard", "add", "-f", "-F", str(note), ANCHOR)


def test_each_line_is_its_own_blob_at_its_bucketed_name(moved: Workspace) -> None:
    text = ledger_text(moved, ANCHOR)
    for n, line in enumerate(text.splitlines(keepends=True)):
        path = "/".join(layout.entry_path(ANCHOR, n))
        assert git(moved.root, "cat-file", "blob", f"{store.REF}:{path}") == line
    assert git(moved.root, "notes", "--ref=vivary/guard", "show", ANCHOR).encode() == (
        layout.marker(ANCHOR)
    )


def test_lines_read_back_in_order_across_bucket_boundaries(ws: Workspace) -> None:
    lines = [f"line {n}\n" for n in range(600)]  # crosses 00/00/ff -> 00/01/00 and more
    put_ledger(ws, ANCHOR, "".join(lines))
    tree = notes.tree_of(ws.repo, tip(ws))
    assert layout.line_count(tree, ANCHOR) == 600
    assert ledger_text(ws, ANCHOR) == "".join(lines)
    assert layout.entry_path(ANCHOR, 256)[2:] == ["00", "01", "00"]


def test_an_older_reader_finds_a_note_it_refuses(moved: Workspace) -> None:
    with pytest.raises(ledger.LedgerBreak):
        ledger.parse(layout.marker(ANCHOR).decode())


def test_a_ledger_in_the_older_layout_reads_verifies_and_migrates(moved: Workspace) -> None:
    text = ledger_text(moved, ANCHOR)
    old_layout(moved, text)
    assert notes.read(moved.repo, tip(moved), ANCHOR) == text.encode()
    assert store.ledgers(moved.repo, tip(moved))[0].legacy
    assert verify_repository(moved.repo).ok
    before = tip(moved)
    code, answer = migrate_cli(moved)
    assert (code, answer["status"], answer["migrated"]) == (0, "migrated", 1)
    assert tip(moved) != before and ledger_text(moved, ANCHOR) == text
    assert not store.ledgers(moved.repo, tip(moved))[0].legacy
    assert verify_repository(moved.repo).ok
    after = tip(moved)
    code, answer = migrate_cli(moved)  # idempotent: nothing left to move writes nothing
    assert (code, answer["status"], tip(moved)) == (0, "up_to_date", after)
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"
    assert verify_repository(moved.repo).ok


def test_an_append_moves_an_older_ledger_by_itself(moved: Workspace) -> None:
    text = ledger_text(moved, ANCHOR)
    old_layout(moved, text)
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"
    grown = store.ledgers(moved.repo, tip(moved))[0]
    assert not grown.legacy and grown.data.startswith(text.encode()) and grown.lines == 4
    assert verify_repository(moved.repo).ok


def test_a_migration_that_changes_the_bytes_is_a_rewrite(moved: Workspace) -> None:
    text = ledger_text(moved, ANCHOR)
    old_layout(moved, text)
    put_ledger(moved, ANCHOR, text.replace('"agent"', '"human"', 1))
    report = verify_repository(moved.repo)
    assert any("rewritten, not appended to" in b.message for b in report.breaks)


def _edit_lines(ws: Workspace, edit: dict[str, pygit2.Oid | None], message: str) -> None:
    """A notes commit that sets (or, with None, removes) line blobs by their path."""
    repo = ws.repo
    old = tip(ws)
    tree = notes.tree_of(repo, old)
    for path, oid in edit.items():
        parts = path.split("/")
        assert tree is not None
        if oid is None:
            parent = tree["/".join(parts[:-1])]
            assert isinstance(parent, pygit2.Tree)
            builder = repo.TreeBuilder(parent)
            builder.remove(parts[-1])
            new = notes.insert(repo, tree, parts[:-1], builder.write(), pygit2.GIT_FILEMODE_TREE)
        else:
            new = notes.insert(repo, tree, parts, oid)
        got = repo[new]
        assert isinstance(got, pygit2.Tree)
        tree = got
    assert tree is not None
    notes.commit(repo, store.REF, old, tree.id, message)


def line_path(n: int) -> str:
    return "/".join(layout.entry_path(ANCHOR, n))


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        ("change", "a line changed"),
        ("remove_last", "a line removed"),
        ("insert_gap", "not appended at the end"),
        ("misplaced", "added out of place"),
    ],
)
def test_any_edit_but_an_append_breaks_the_history(moved: Workspace, edit: str, why: str) -> None:
    repo = moved.repo
    text = ledger_text(moved, ANCHOR).splitlines(keepends=True)
    other = repo.create_blob(text[1].replace("draft", "released").encode())
    edits: dict[str, dict[str, pygit2.Oid | None]] = {
        "change": {line_path(1): other},
        "remove_last": {line_path(2): None},
        "insert_gap": {line_path(5): other},
        "misplaced": {f"{layout.LEDGERS}/{ANCHOR}/00/00/zz": other},
    }
    _edit_lines(moved, edits[edit], "edit\n")
    report = verify_repository(moved.repo)
    assert not report.ok
    assert any(why in b.message and b.resource_id == RID for b in report.breaks), report.breaks


def test_a_ledger_both_as_note_and_as_lines_is_refused(moved: Workspace) -> None:
    text = ledger_text(moved, ANCHOR)
    repo = moved.repo
    old = gitrefs.read_ref(repo, store.REF)
    tree = notes.tree_of(repo, old)
    new = notes.insert(repo, tree, notes.note_path(tree, ANCHOR), repo.create_blob(text.encode()))
    notes.commit(repo, store.REF, old, new, "two ledgers\n")
    report = verify_repository(moved.repo)
    assert any("a note that is a ledger too" in b.message for b in report.breaks)
    with pytest.raises(Exception, match="a note that is a ledger too"):
        engine.transition(moved.repo, MOVE)


def test_an_older_ledger_rewritten_in_place_is_still_caught(moved: Workspace) -> None:
    text = ledger_text(moved, ANCHOR)
    old_layout(moved, text)
    assert verify_repository(moved.repo).ok
    edited = moved.tmp / "edited.txt"
    edited.write_text(text.splitlines(keepends=True)[0])  # dropped lines, as one note
    git(moved.root, "notes", "--ref=vivary/guard", "add", "-f", "-F", str(edited), ANCHOR)
    report = verify_repository(moved.repo)
    assert any(
        "rewritten, not appended to" in b.message and b.resource_id == RID for b in report.breaks
    )


def test_concurrent_migrations_move_each_ledger_once(moved: Workspace) -> None:
    text = ledger_text(moved, ANCHOR)
    old_layout(moved, text)
    args = [str(STRATO), "guard", "migrate-store", "--root", str(moved.root), "--json"]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    answers = [json.loads(p.communicate()[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(int(str(a["migrated"])) for a in answers) == 1  # the others saw it done
    assert ledger_text(moved, ANCHOR) == text and verify_repository(moved.repo).ok
    assert len(git(moved.root, "rev-list", store.REF).split()) == 3  # 2 old + 1 migration


def test_a_prefix_id_names_exactly_the_first_lines(ws: Workspace) -> None:
    """Two ledgers agree on the prefix id of their first ``n`` lines exactly when those
    lines are the same bytes, whatever follows, on either side of a bucket boundary:
    the cache resumes from a record only under that name."""
    base = [f"line {n}\n".encode() for n in range(300)]  # 00/00/00 .. 00/01/2b

    def tree(lines: list[bytes]) -> pygit2.Tree:
        found = ws.repo[ledgertrees.lines_tree_of(ws.repo, lines)]
        assert isinstance(found, pygit2.Tree)
        return found

    whole = tree(base)
    cuts = (1, 2, 255, 256, 257, 258, 300)
    assert layout.prefix_id(whole, 0) == "" and layout.prefix_id(whole, 301) == ""
    assert len({layout.prefix_id(whole, n) for n in cuts}) == len(cuts)
    assert all(layout.prefix_id(tree(base[:n]), n) == layout.prefix_id(whole, n) for n in cuts)
    for changed in (0, 1, 254, 255, 256, 257, 299):
        other = tree([*base[:changed], b"edited\n", *base[changed + 1 :]])
        for n in cuts:
            same = layout.prefix_id(other, n) == layout.prefix_id(whole, n)
            assert same == (n <= changed), (changed, n)


def test_a_warm_cache_checks_every_line_of_another_history(moved: Workspace) -> None:
    """The cache knows the first 3 lines; a ledger whose first line was edited in place
    (its stated digest kept) is another history, and every line of it is checked, the
    first one too."""
    assert store.load(moved.repo, RID).state is not None  # the cache knows this ledger
    lines = ledger_text(moved, ANCHOR).splitlines(keepends=True)
    lines[0] = re.sub(r'"ts_ms":\d+', '"ts_ms":1', lines[0])
    put_ledger(moved, ANCHOR, "".join(lines))
    with pytest.raises(GuardError, match="broken at line 1: entry_digest does not match"):
        store.load(moved.repo, RID)
    breaks = verify_repository(moved.repo).breaks
    assert breaks and breaks[0].line == 1 and "entry_digest does not match" in breaks[0].message, breaks


def test_a_ledger_that_is_not_utf8_is_refused_at_its_first_line(moved: Workspace) -> None:
    repo, old = moved.repo, tip(moved)
    data = ledger_text(moved, ANCHOR).encode() + b"\xff\n"
    notes.commit(repo, store.REF, old, ledgertrees.replace_tree(repo, old, ANCHOR, data), "not UTF-8\n")
    with pytest.raises(GuardError) as info:
        store.load(moved.repo, RID)
    assert str(info.value) == f"ledger of {RID!r} is broken at line 1: ledger is not UTF-8"


def test_a_load_at_an_older_notes_commit_reads_the_ledger_as_it_was_there(moved: Workspace) -> None:
    old = tip(moved)
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"
    for cached in (True, False):  # resumed from the local record, and from the notes record
        if not cached:
            shutil.rmtree(cache.GuardCache(moved.repo).root)
        then, now = store.load(moved.repo, RID, old), store.load(moved.repo, RID)
        assert then.tip == old and then.lines == 3 and then.state is not None
        assert (then.state.length, then.state.current_state) == (3, "draft")
        assert now.tip == tip(moved) and now.state is not None and now.state.current_state == "review"


def test_a_full_load_records_the_lines_it_checked_under_the_ledgers_anchor(moved: Workspace) -> None:
    put_ledger(moved, ANCHOR, ledger_text(moved, ANCHOR))  # the same lines, no running state
    shutil.rmtree(cache.GuardCache(moved.repo).root)
    snap = store.load(moved.repo, RID)
    assert snap.generation != ""  # folded in full: every line checked
    tree = layout.lines_tree(notes.tree_of(moved.repo, tip(moved)), ANCHOR)
    data = ledger_text(moved, ANCHOR).encode()
    found = cache.GuardCache(moved.repo).record(ANCHOR)
    assert found is not None and (found.blob, found.size, found.lines) == (layout.prefix_id(tree, 3), len(data), 3)
    assert snap.state is not None and found.fold == running.of_state(snap.state)  # and what they fold to
    assert found.generation == snap.generation


def test_a_ledger_the_tree_does_not_hold_soundly_is_refused_with_its_problem(moved: Workspace) -> None:
    git(moved.root, "notes", "--ref=vivary/guard", "remove", ANCHOR)  # the lines stay
    with pytest.raises(GuardError) as info:
        store.load(moved.repo, RID)
    assert (info.value.error_type, info.value.message) == (
        "ledger_corrupt",
        f"ledger of {RID!r}: ledger lines under {layout.LEDGERS}/ but no note",
    )


@pytest.mark.parametrize("edit", ["a gap after the cached lines", "a line that is a directory"])
def test_lines_past_the_cached_tail_that_are_not_there_are_refused_not_a_crash(
    moved: Workspace, edit: str
) -> None:
    """The local record knows the first 4 lines; the names then promise lines the
    tree does not hold as blobs. Every writer refuses the ledger with what is wrong, as
    a cold read does, instead of failing on the missing blob."""
    put_ledger(moved, ANCHOR, ledger_text(moved, ANCHOR))  # no running state: a full fold
    assert store.load(moved.repo, RID).generation != ""  # recorded in the local cache
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"  # the record: 4 lines
    repo = moved.repo
    first = repo.create_blob(ledger_text(moved, ANCHOR).splitlines(keepends=True)[1].encode())
    if edit == "a gap after the cached lines":
        _edit_lines(moved, {line_path(6): first}, "a line past a gap\n")
        where = "00/00/06"
    else:
        _edit_lines(moved, {f"{line_path(4)}/x": first}, "a directory for a line\n")
        where = "00/00/04"
    message = f"ledger of {RID!r}: ledger line {where!r} is out of sequence (a line is missing)"
    for attempt in (lambda: store.load(repo, RID), lambda: engine.transition(repo, BACK)):
        with pytest.raises(GuardError) as info:
            attempt()
        assert (info.value.error_type, info.value.message) == ("ledger_corrupt", message)
