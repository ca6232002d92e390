"""The guard's write path and the notes tree it reads: `append.commit` seals an entry on the
newest ledger and moves the notes ref by compare-and-swap (a lost race runs the step again,
a held lock is waited on and then named, a ref that keeps moving is given up); the tree
walkers find every line where the layout puts it and name every odd entry."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest

from strato.guard import append, cache, engine, layout, ledger, running, store
from strato.guard.canonical import seal
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from tests.support.guard import Workspace, ledger_text, put_ledger
from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

RID = "svc:commit"
ANCHOR = notes.anchor_id(store.anchor_content(RID))
FLIP = {"a": ["b"], "b": ["a"]}

Spec = dict[str, "bytes | pygit2.Tree | Spec"]


def tip(ws: Workspace) -> str | None:
    return gitrefs.read_ref(ws.repo, store.REF)


def flip_fields(state: ledger.State) -> dict[str, Any]:
    """A transition entry from the current state to the other one (before ``commit``
    adds its time, link and head)."""
    return {
        "from_state": state.current_state,
        "to_state": "b" if state.current_state == "a" else "a",
        "outcome": "applied",
        "kind": "transition",
        "resolved_by": "agent",
        "idempotency_key": None,
        "payload_digest": "0" * 64,
        "rationale": None,
        "verdict": None,
    }


def flip(
    seen: list[store.Snapshot], first: Callable[[int], None] = lambda _: None
) -> append.Step:
    """A step that flips the state and answers the sealed entry; it records every snapshot
    it was run on, and runs ``first(n)`` (another writer, say) on its ``n``th run."""

    def step(snap: store.Snapshot) -> tuple[dict[str, Any], append.Respond]:
        seen.append(snap)
        first(len(seen))
        return flip_fields(store.require(snap)), lambda sealed: sealed

    return step


@pytest.fixture
def reg(ws: Workspace) -> Workspace:
    engine.register(ws.repo, {"resource_id": RID, "graph": FLIP, "initial": "a"})
    return ws


def lines(ws: Workspace) -> list[dict[str, Any]]:
    return ledger.parse(ledger_text(ws, ANCHOR))


# -- commit -----------------------------------------------------------------------------


def test_a_step_that_answers_without_an_entry_writes_nothing(reg: Workspace) -> None:
    before = tip(reg)
    seen: list[store.LedgerSnapshot] = []

    def step(snap: store.LedgerSnapshot) -> dict[str, Any]:
        seen.append(snap)
        return {"status": "exists"}

    assert append.commit(reg.repo, RID, step) == {"status": "exists"}
    assert tip(reg) == before and [s.tip for s in seen] == [before]


def test_a_sealed_entry_links_to_the_head_and_the_commit_names_it(ws: Workspace) -> None:
    rid = "svc:" + "x" * 96  # the message keeps the first 80 characters of the id
    anchor = notes.anchor_id(store.anchor_content(rid))
    engine.register(ws.repo, {"resource_id": rid, "graph": FLIP, "initial": "a"})
    registered = store.require(store.load(ws.repo, rid)).head
    before, start = tip(ws), int(time.time() * 1000)
    entry = append.commit(ws.repo, rid, flip([]))
    assert start <= entry["ts_ms"] <= int(time.time() * 1000)
    assert entry["prev_digest"] == registered
    assert entry["git_head"] == git(ws.root, "rev-parse", "HEAD").strip()
    assert (entry["from_state"], entry["to_state"]) == ("a", "b")
    after = tip(ws)
    assert after is not None
    written = ws.repo[after]
    assert isinstance(written, pygit2.Commit)
    assert [str(p) for p in written.parent_ids] == [before]
    assert written.message == f"guard: {rid[:80]} transition applied\n"
    path = "/".join(layout.entry_path(anchor, 1))
    line = git(ws.root, "cat-file", "blob", f"{store.REF}:{path}")
    assert ledger.parse(ledger_text(ws, anchor))[1] == entry == ledger.loads(line)
    state = git(ws.root, "cat-file", "blob", f"{store.REF}:{running.STATE}/{anchor}")
    assert state.encode() == running.render(running.of_state(store.require(store.load(ws.repo, rid))))


def test_an_entry_written_before_the_first_commit_names_no_head(repo_dir: Path) -> None:
    repo = gitrepo.require(repo_dir)
    engine.register(repo, {"resource_id": RID, "graph": FLIP, "initial": "a"})
    entry = append.commit(repo, RID, flip([]))
    assert entry["git_head"] is None
    assert [e["git_head"] for e in ledger.parse(ledger_text(Workspace(repo_dir, repo_dir), ANCHOR))] == [
        None,
        None,
    ]


def test_a_snapshot_read_before_is_used_only_while_the_ref_has_not_moved(reg: Workspace) -> None:
    read = store.load(reg.repo, RID)
    seen: list[store.Snapshot] = []
    append.commit(reg.repo, RID, flip(seen), read)
    assert seen[0] is read  # the ref had not moved: not read again
    stale = store.load(reg.repo, RID)
    append.commit(reg.repo, RID, flip([]))  # another writer moves the ref
    seen.clear()
    entry = append.commit(reg.repo, RID, flip(seen), stale)
    assert len(seen) == 1 and seen[0] is not stale and seen[0].tip != stale.tip
    assert [e["to_state"] for e in lines(reg)] == ["a", "b", "a", "b"]
    assert entry["prev_digest"] == lines(reg)[2]["entry_digest"]


def test_a_lost_race_runs_the_step_again_on_the_winners_ledger(reg: Workspace) -> None:
    winners: list[tuple[dict[str, Any], str | None]] = []

    def other_writer(n: int) -> None:
        if n == 1:  # between our read and our write, another writer appends
            winners.append((append.commit(reg.repo, RID, flip([])), tip(reg)))

    seen: list[store.Snapshot] = []
    entry = append.commit(reg.repo, RID, flip(seen, other_writer))
    assert [s.lines for s in seen] == [1, 2]
    (won, won_tip), = winners
    assert seen[1].tip == won_tip != seen[0].tip
    assert (entry["from_state"], entry["to_state"]) == ("b", "a")  # the winner's state, seen
    assert entry["prev_digest"] == won["entry_digest"]
    assert [e["entry_digest"] for e in lines(reg)][1:] == [won["entry_digest"], entry["entry_digest"]]
    assert store.require(store.load(reg.repo, RID)).current_state == "a"


def test_a_held_lock_is_waited_on_then_named(reg: Workspace) -> None:
    before = tip(reg)
    lock = Path(reg.repo.path) / (store.REF + ".lock")
    lock.write_text("")
    seen: list[store.LedgerSnapshot] = []
    with pytest.raises(GuardError) as info:
        append.commit(reg.repo, RID, flip(seen))
    assert info.value.error_type == "ledger_busy"
    assert info.value.message == (
        f"{lock} exists: another writer holds it, or one was killed; "
        "run `strato guard unlock` (it checks the lock is stale and the ledger sound)"
    )
    assert len(seen) == append.MAX_LOCK_WAITS + 1 and {s.tip for s in seen} == {before}
    lock.unlink()
    assert tip(reg) == before and len(lines(reg)) == 1


def test_a_ref_that_keeps_moving_is_given_up(reg: Workspace) -> None:
    def other_writer(_: int) -> None:  # moves the ref before every one of our writes
        old = tip(reg)
        tree = notes.tree_of(reg.repo, old)
        assert tree is not None
        notes.commit(reg.repo, store.REF, old, tree.id, "another writer\n")

    seen: list[store.LedgerSnapshot] = []
    with pytest.raises(GuardError) as info:
        append.commit(reg.repo, RID, flip(seen, other_writer))
    assert (info.value.error_type, info.value.message) == (
        "ledger_busy",
        f"{store.REF} kept moving; try again",
    )
    assert len(seen) == store.MAX_ATTEMPTS and len({s.tip for s in seen}) == store.MAX_ATTEMPTS
    assert len(lines(reg)) == 1


def test_a_signing_failure_writes_nothing(reg: Workspace) -> None:
    before = tip(reg)
    git(reg.root, "config", "vivary.signNotes", "maybe")
    with pytest.raises(GuardError) as info:
        append.commit(reg.repo, RID, flip([]))
    assert (info.value.error_type, info.value.message) == (
        "signing_failed",
        "git config vivary.signNotes is not a boolean",
    )
    assert tip(reg) == before


def test_an_object_store_that_cannot_be_written_is_ledger_busy(reg: Workspace) -> None:
    before = tip(reg)
    git(reg.root, "repack", "-q", "-a", "-d")
    git(reg.root, "prune-packed")
    objects = Path(reg.repo.path) / "objects"
    for n in range(256):  # every loose object's directory is a file: no object can be written
        (objects / f"{n:02x}").touch()
    with pytest.raises(GuardError) as info:
        append.commit(reg.repo, RID, flip([]))
    assert info.value.error_type == "ledger_busy"
    assert re.fullmatch(
        f"cannot move {store.REF}: failed to make directory '{re.escape(str(objects))}/[0-9a-f]{{2}}': "
        "directory exists",
        info.value.message,
    ), info.value.message
    assert tip(reg) == before


def test_an_append_records_the_new_ledger_as_checked(reg: Workspace) -> None:
    verified = cache.GuardCache(reg.repo)
    for n in (2, 3):
        append.commit(reg.repo, RID, flip([]))
        tree = notes.tree_of(reg.repo, tip(reg))
        found = verified.record(ANCHOR)
        assert found is not None
        assert (found.blob, found.size, found.lines, found.verified, found.running) == (
            layout.prefix_id(layout.lines_tree(tree, ANCHOR), n), 0, n, None, ""
        )
        assert found.fold is None or found.fold == running.of_state(store.require(store.load(reg.repo, RID)))


def sealed_ledger(ws: Workspace, count: int) -> str:
    """The registered ledger grown by hand to ``count`` lines of flips, sealed and linked."""
    text = ledger_text(ws, ANCHOR)
    prev = ledger.parse(text)[-1]["entry_digest"]
    at, base = "a", flip_fields(store.require(store.load(ws.repo, RID)))
    for _ in range(count - 1):
        to = "b" if at == "a" else "a"
        fields = {**base, "from_state": at, "to_state": to}
        entry, line = seal({"ts_ms": 1, **fields, "prev_digest": prev, "git_head": None})
        text, prev, at = text + line, entry["entry_digest"], to
    return text


def packs(ws: Workspace) -> int:
    return len(list((Path(ws.repo.path) / "objects" / "pack").glob("*.pack")))


def test_every_256th_line_lets_git_pack_the_loose_objects(reg: Workspace) -> None:
    git(reg.root, "config", "gc.autoDetach", "false")
    git(reg.root, "config", "gc.autoPackLimit", "1")  # more than one pack: `gc --auto` repacks
    put_ledger(reg, ANCHOR, sealed_ledger(reg, append.GC_EVERY - 2))
    git(reg.root, "repack", "-q")
    loose = reg.repo.create_blob(b"a loose object\n")
    pack = Path(reg.repo.path) / "objects" / "pack" / "pack"
    subprocess.run(
        ["git", "pack-objects", "-q", str(pack)], cwd=reg.root, input=f"{loose}\n", text=True, check=True
    )
    assert packs(reg) == 2
    append.commit(reg.repo, RID, flip([]))  # line 255: no gc
    assert packs(reg) == 2 and len(lines(reg)) == append.GC_EVERY - 1
    append.commit(reg.repo, RID, flip([]))  # line 256
    assert packs(reg) == 1 and len(lines(reg)) == append.GC_EVERY
    assert store.require(store.load(reg.repo, RID)).length == append.GC_EVERY


def unreachable(ws: Workspace) -> set[str]:
    return set(git(ws.root, "fsck", "--unreachable", "--no-reflogs", "--no-progress").split())


def test_an_append_writes_no_object_its_notes_commit_does_not_keep(reg: Workspace) -> None:
    # each unreachable object counts against `git gc --auto`, which refuses to run at all
    # (gc.log: "too many unreachable loose objects") once there are thousands of them
    def move(src: str, dst: str) -> None:
        req = {"resource_id": RID, "from_state": src, "to_state": dst}
        assert engine.transition(reg.repo, req)["status"] == "applied"

    move("a", "b")
    before = unreachable(reg)
    move("b", "a")
    move("a", "b")
    append.commit(reg.repo, RID, flip([]))
    assert unreachable(reg) == before and len(lines(reg)) == 5

# -- the tree walkers -------------------------------------------------------------------


def build(repo: pygit2.Repository, spec: Spec) -> pygit2.Tree:
    """A tree of ``spec``: bytes are blobs, dicts are subtrees (an empty dict an empty
    tree), trees are taken as they are."""
    builder = repo.TreeBuilder()
    for name, item in spec.items():
        if isinstance(item, bytes):
            builder.insert(name, repo.create_blob(item), pygit2.GIT_FILEMODE_BLOB)
        elif isinstance(item, pygit2.Tree):
            builder.insert(name, item.id, pygit2.GIT_FILEMODE_TREE)
        else:
            builder.insert(name, build(repo, item).id, pygit2.GIT_FILEMODE_TREE)
    found = repo[builder.write()]
    assert isinstance(found, pygit2.Tree)
    return found


def ledger_tree(count: int) -> Spec:
    """``ledgers/<anchor>`` holding lines 0 .. count-1, each ``line <n>``."""
    top: Spec = {}
    for n in range(count):
        a, b, c = layout.entry_path(ANCHOR, n)[2:]
        mid = top.setdefault(a, {})
        assert isinstance(mid, dict)
        leaf = mid.setdefault(b, {})
        assert isinstance(leaf, dict)
        leaf[c] = f"line {n}\n".encode()
    return top


def stored(ws: Workspace, spec: Spec, note: bytes | None) -> layout.Stored:
    repo = ws.repo
    oid = str(repo.create_blob(note)) if note is not None else None
    return layout.stored(repo, build(repo, spec), ANCHOR, oid)


def test_entry_path_names_six_hex_digits_in_three_levels_and_refuses_past_the_end() -> None:
    assert layout.entry_path(ANCHOR, 0) == [layout.LEDGERS, ANCHOR, "00", "00", "00"]
    assert layout.entry_path(ANCHOR, 0x12AB3C) == [layout.LEDGERS, ANCHOR, "12", "ab", "3c"]
    assert layout.entry_path(ANCHOR, layout.MAX_LINES - 1)[2:] == ["ff", "ff", "ff"]
    for line in (layout.MAX_LINES, -1):
        with pytest.raises(GuardError) as info:
            layout.entry_path(ANCHOR, line)
        assert (info.value.error_type, info.value.message) == (
            "ledger_full",
            "a ledger holds at most 16777216 lines",
        )


def test_the_anchor_and_the_marker_are_the_bytes_every_clone_agrees_on() -> None:
    """Where a clone looks for a ledger, and what an older reader finds there."""
    assert store.anchor_content("svc:ü") == b"vivary-guard-anchor\nsvc:\xc3\xbc"
    assert layout.marker("ab" * 20) == (
        b"vivary guard ledger: its lines are the blobs under ledgers/" + b"ab" * 20 + b"/ "
        b"of this notes tree; this note is not a ledger line (upgrade vivary to read it)\n"
    )


def test_require_names_the_resource_with_no_guard() -> None:
    with pytest.raises(GuardError) as info:
        store.require(store.LedgerSnapshot(None, "svc:none", None))
    assert (info.value.error_type, info.value.message) == (
        "guard_not_found",
        "no guard is registered for 'svc:none'",
    )


def test_lines_tree_and_line_count_read_only_the_ledgers_own_tree(ws: Workspace) -> None:
    repo = ws.repo
    lines = build(repo, ledger_tree(300))
    whole = build(repo, {layout.LEDGERS: {ANCHOR: lines, "ff" * 20: ledger_tree(3)}})
    found = layout.lines_tree(whole, ANCHOR)
    assert found is not None and found.id == lines.id
    assert layout.line_count(whole, ANCHOR) == 300 and layout.line_count(whole, "ff" * 20) == 3
    for n in (1, 255, 256, 257):
        assert layout.line_count(build(repo, {layout.LEDGERS: {ANCHOR: ledger_tree(n)}}), ANCHOR) == n
    nothing = [
        None,
        build(repo, {"other": {ANCHOR: lines}}),
        build(repo, {layout.LEDGERS: b"a blob"}),
        build(repo, {layout.LEDGERS: {"ff" * 20: lines}}),
        build(repo, {layout.LEDGERS: {ANCHOR: b"a blob"}}),
    ]
    for tree in nothing:
        assert layout.lines_tree(tree, ANCHOR) is None and layout.line_count(tree, ANCHOR) == 0
    odd: list[Spec] = [
        {},  # no line at all
        {"00": {}},  # an empty level
        {"00": {"00": {}}},
        {"00": b"a blob"},
        {"00": {"00": {"zz": b"x"}}},  # a last name that is no number
    ]
    for spec in odd:
        assert layout.line_count(build(repo, {layout.LEDGERS: {ANCHOR: spec}}), ANCHOR) == 0, spec


def test_running_blob_is_the_state_blob_of_that_anchor_only(ws: Workspace) -> None:
    repo = ws.repo
    blob = repo.create_blob(b"state bytes\n")
    tree = build(repo, {running.STATE: {ANCHOR: b"state bytes\n", "ff" * 20: b"other\n"}})
    assert layout.running_blob(tree, ANCHOR) == (str(blob), b"state bytes\n")
    not_blob = build(repo, {running.STATE: {ANCHOR: {"x": b"y"}}})
    item = not_blob[running.STATE][ANCHOR]
    assert layout.running_blob(not_blob, ANCHOR) == (str(item.id), b"")
    for none in (
        None,
        build(repo, {"other": {ANCHOR: b"s"}}),
        build(repo, {running.STATE: b"a blob"}),
        build(repo, {running.STATE: {"ff" * 20: b"s"}}),
    ):
        assert layout.running_blob(none, ANCHOR) is None


def test_every_odd_name_among_the_lines_is_named(ws: Workspace) -> None:
    cases: list[tuple[Spec, str]] = [
        ({"zz": {}}, "unexpected entry 'zz' among the ledger's lines"),
        ({"000": {}}, "unexpected entry '000' among the ledger's lines"),
        ({"0": {}}, "unexpected entry '0' among the ledger's lines"),
        ({"0A": {}}, "unexpected entry '0A' among the ledger's lines"),
        ({"00": {"00": {"00": b"l\n", "x1": b"l\n"}}}, "unexpected entry '00/00/x1' among the ledger's lines"),
        ({"00": b"l\n"}, "'00' is not a directory of ledger lines"),
        ({"00": {"00": b"l\n"}}, "'00/00' is not a directory of ledger lines"),
        ({"00": {"00": {"00": {}}}}, "ledger line '00/00/00' is out of sequence (a line is missing)"),
        ({"00": {"00": {"01": b"l\n"}}}, "ledger line '00/00/01' is out of sequence (a line is missing)"),
        (
            {"00": {"00": {"00": b"l\n", "01": b"l\n", "03": b"l\n"}}},
            "ledger line '00/00/03' is out of sequence (a line is missing)",
        ),
        (
            {"00": {"00": {"00": b"l\n"}, "02": {"00": b"l\n"}}},
            "ledger line '00/02/00' is out of sequence (a line is missing)",
        ),
    ]
    marker = layout.marker(ANCHOR)
    for spec, problem in cases:
        found = stored(ws, {layout.LEDGERS: {ANCHOR: spec}}, marker)
        assert (found.problem, found.parts) == (problem, ()), spec
    good = stored(ws, {layout.LEDGERS: {ANCHOR: ledger_tree(258)}}, marker)
    assert good.problem is None and good.lines == 258
    assert good.data == b"".join(f"line {n}\n".encode() for n in range(258))
    assert good.first_line == b"line 0\n" and not good.legacy


def test_a_ledger_the_notes_tree_does_not_hold_readably_is_named(ws: Workspace) -> None:
    marker = layout.marker(ANCHOR)
    lines = {layout.LEDGERS: {ANCHOR: ledger_tree(2)}}
    state = {running.STATE: {ANCHOR: b"state\n"}}
    cases: list[tuple[Spec, bytes | None, str]] = [
        (state, None, f"a running-state blob under {running.STATE}/ for no ledger"),
        (lines, None, f"ledger lines under {layout.LEDGERS}/ but no note"),
        (lines, b"line 0\nline 1\n", f"ledger lines under {layout.LEDGERS}/ but a note that is a ledger too"),
        (
            # the names walk cleanly, but the last one (an empty level) counts no line
            {layout.LEDGERS: {ANCHOR: {"00": {"00": {"00": b"l\n", "01": b"l\n"}, "01": {}}}}},
            marker,
            "the ledger's line names do not count up from 000000",
        ),
    ]
    for spec, note, problem in cases:
        found = stored(ws, spec, note)
        assert (found.anchor, found.problem, found.blob, found.lines) == (ANCHOR, problem, "", 0), problem
    older = stored(ws, {}, b"line 0\nline 1\n")  # the older layout: the whole ledger as the note
    assert older.problem is None and older.legacy and older.data == b"line 0\nline 1\n"
    assert older.blob == str(ws.repo.create_blob(b"line 0\nline 1\n")) and older.first_line == b"line 0"
    assert (older.anchor, older.running, older.running_id) == (ANCHOR, None, "")
    older_state = stored(ws, state, b"line 0\nline 1\n")  # as migrate-store leaves it
    assert (older_state.problem, older_state.legacy, older_state.running) == (None, True, b"state\n")
    assert older_state.running_id == str(ws.repo.create_blob(b"state\n"))
    none = stored(ws, {}, None)
    assert (none.problem, none.data, none.legacy, none.running, none.running_id) == (None, b"", False, None, "")
    with_state = stored(ws, {**lines, **state}, marker)
    assert with_state.problem is None and with_state.running == b"state\n"
    assert with_state.running_id == str(ws.repo.create_blob(b"state\n"))
    assert with_state.blob == layout.prefix_id(layout.lines_tree(build(ws.repo, lines), ANCHOR), 2)


def test_ledgers_lists_every_anchor_of_notes_lines_and_states(ws: Workspace) -> None:
    repo = ws.repo
    a, b, c = "aa" * 20, "bb" * 20, "cc" * 20
    note = repo.create_blob(b"not a ledger\n")
    tree = repo[
        notes.insert(
            repo,
            build(repo, {layout.LEDGERS: {b: ledger_tree(1)}, running.STATE: {c: b"state\n"}}),
            [a],
            note,
        )
    ]
    assert isinstance(tree, pygit2.Tree)
    commit = notes.commit(repo, store.REF, None, tree.id, "three anchors\n")
    found = store.ledgers(repo, commit)
    assert [s.anchor for s in found] == [a, b, c]
    assert [s.problem for s in found] == [
        None,
        f"ledger lines under {layout.LEDGERS}/ but no note",
        f"a running-state blob under {running.STATE}/ for no ledger",
    ]
    assert found[0].data == b"not a ledger\n" and found[0].blob == str(note)


def test_an_empty_ledger_tree_is_a_ledger_of_no_resource(ws: Workspace) -> None:
    """``ledgers/<anchor>`` an empty tree under the marker: no line to claim a resource,
    which verify names instead of failing on the missing register line."""
    repo = ws.repo
    tree = build(repo, {layout.LEDGERS: {ANCHOR: {}}, ANCHOR: layout.marker(ANCHOR)})
    notes.commit(repo, store.REF, None, tree.id, "empty\n")
    found = store.ledgers(repo, tip(ws))[0]
    assert (found.problem, found.lines, found.data, found.first_line) == (None, 0, b"", b"")
    breaks = verify_repository(repo).breaks
    assert [(b.resource_id, b.line, b.message) for b in breaks] == [
        (None, 1, "note does not belong to the resource it registers")
    ]


def test_an_append_keeps_every_annotated_blob_reachable(ws: Workspace) -> None:
    """A ledger in the older layout, written by ``git notes`` on its anchor, is not listed
    under ``anchors/``: the next append to any ledger lists it, so gc never prunes the
    anchor and ``git notes prune`` never drops that ledger."""
    other = "svc:older"
    engine.register(ws.repo, {"resource_id": other, "graph": FLIP, "initial": "a"})
    text = ledger_text(ws, notes.anchor_id(store.anchor_content(other)))
    git(ws.root, "update-ref", "-d", store.REF)
    anchor = notes.anchor_id(store.anchor_content(other))  # the blob is in the object store
    (ws.tmp / "ledger.txt").write_text(text)
    git(ws.root, "notes", "--ref=vivary/guard", "add", "-F", str(ws.tmp / "ledger.txt"), anchor)
    engine.register(ws.repo, {"resource_id": RID, "graph": FLIP, "initial": "a"})
    assert notes.kept_anchors(ws.repo, tip(ws)) == {anchor, ANCHOR}
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    git(ws.root, "gc", "-q", "--prune=now")
    git(ws.root, "notes", "--ref=vivary/guard", "prune")
    assert engine.history(ws.repo, {"resource_id": other})["current_state"] == "a"
    assert verify_repository(ws.repo).ok


def test_a_warm_cache_never_spares_the_walk_of_other_line_names(reg: Workspace) -> None:
    """The cache knows this ledger under its prefix id; an odd name added among its lines
    makes another name, so the lines are walked again and the odd one named."""
    append.commit(reg.repo, RID, flip([]))  # the chain record: this ledger, checked
    repo, old = reg.repo, tip(reg)
    tree = notes.tree_of(repo, old)
    odd = [layout.LEDGERS, ANCHOR, "00", "00", "zz"]
    notes.commit(repo, store.REF, old, notes.insert(repo, tree, odd, repo.create_blob(b"x\n")), "odd\n")
    assert cache.GuardCache(repo).record(ANCHOR) is not None
    new = tip(reg)
    note = notes.note_blob(repo, new, ANCHOR)
    found = layout.stored(repo, notes.tree_of(repo, new), ANCHOR, note, cache.GuardCache(repo))
    assert found.problem == "unexpected entry '00/00/zz' among the ledger's lines"
    with pytest.raises(GuardError) as info:
        store.load(repo, RID)
    assert info.value.message == f"ledger of {RID!r}: unexpected entry '00/00/zz' among the ledger's lines"
