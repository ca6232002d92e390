"""The running state kept beside a ledger's lines (``state/<anchor>``): every append
writes the state its lines fold to; a writer with no cache uses it without reading the
ledger, and only when it is consistent with the lines it names; verify and review break
on one the lines do not imply; ledgers without it keep working and get it back."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strato.guard import (
    cache,
    engine,
    layout,
    ledger,
    ledgertrees,
    running,
    signedops,
    store,
)
from strato.guard.canonical import seal
from strato.guard.errors import GuardError
from strato.guard.review import review
from strato.guard.verify import verify_repository
from tests.support.guard import POLICY, Key, Workspace, ledger_text, migrate_cli, put_ledger
from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs

RID = "svc:running"
ANCHOR = notes.anchor_id(store.anchor_content(RID))
MOVE = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
BACK = {"resource_id": RID, "from_state": "review", "to_state": "draft"}
UPGRADE = {
    "resource_id": RID,
    "new_graph": {"draft": ["review", "parked"], "review": ["released", "draft"], "parked": []},
    "new_terminal": ["released"],
    "new_edge_predicates": copy.deepcopy(POLICY["edge_predicates"]),
    "new_stakes": copy.deepcopy(POLICY["stakes"]),
    "rationale": "a parking state",
}


def tip(ws: Workspace) -> str | None:
    return gitrefs.read_ref(ws.repo, store.REF)


def state_blob(ws: Workspace) -> bytes | None:
    kept = layout.running_blob(notes.tree_of(ws.repo, tip(ws)), ANCHOR)
    return None if kept is None else kept[1]


def folded(ws: Workspace) -> ledger.State:
    return ledger.load(ledger_text(ws, ANCHOR), RID)


def drop_cache(ws: Workspace) -> None:
    shutil.rmtree(cache.GuardCache(ws.repo).root, ignore_errors=True)


def put_state(ws: Workspace, data: bytes | None, as_tree: bool = False) -> None:
    """Replace (or, with None, remove) the running-state blob in a new notes commit, as
    anyone who can push the notes ref can."""
    repo, old = ws.repo, tip(ws)
    tree = notes.tree_of(repo, old)
    assert tree is not None
    if data is None:
        new = ledgertrees.without_state(repo, tree, ANCHOR)
    elif as_tree:
        inner = repo.TreeBuilder()
        inner.insert("x", repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
        new = notes.insert(repo, tree, [running.STATE, ANCHOR], inner.write(), pygit2.GIT_FILEMODE_TREE)
    else:
        new = notes.insert(repo, tree, [running.STATE, ANCHOR], repo.create_blob(data))
    notes.commit(repo, store.REF, old, new, "hand-edited running state\n")


@pytest.fixture
def moved(ws: Workspace) -> Workspace:
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    assert engine.transition(ws.repo, MOVE)["status"] == "applied"
    assert engine.transition(ws.repo, BACK)["status"] == "applied"
    return ws


def test_every_append_writes_the_state_its_lines_fold_to(ws: Workspace) -> None:
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    steps: list[Callable[[], object]] = [
        lambda: engine.transition(ws.repo, MOVE),  # refused: no NOTES.md yet
        lambda: (ws.root / "NOTES.md").write_text("n\n"),
        lambda: engine.transition(ws.repo, MOVE),  # applied
        lambda: engine.transition(ws.repo, BACK),
        lambda: signedops.upgrade(ws.repo, UPGRADE),  # the policy line moves
        lambda: engine.transition(ws.repo, {**MOVE, "idempotency_key": "k"}),
    ]
    seen = [state_blob(ws)]
    for step in steps:
        step()
        seen.append(state_blob(ws))
        assert seen[-1] == running.render(running.of_state(folded(ws)))
        drop_cache(ws)  # and a writer with no cache takes it, whatever the last line was
        snap = store.load(ws.repo, RID)
        assert snap.generation == "" and snap.state is not None
        assert running.of_state(snap.state) == running.of_state(folded(ws))
    last = running.parse(seen[-1] or b"")
    assert last is not None and (last.lines, last.current_state, last.graph_version, last.policy_line) == (
        6,
        "review",
        2,
        4,
    )
    assert verify_repository(ws.repo).ok


def test_an_uncached_append_reads_no_line_but_the_last_and_the_policy_line(moved: Workspace) -> None:
    """The proof that the writer's load does not read the ledger: a middle line's object
    is gone, yet a load with no cache answers (a full read would fail on it). A
    transition verifies the whole ledger before anything runs, so it refuses (never a
    crash) until the object is back, and then appends."""
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"  # 4 lines: 0 register
    middle = git(moved.root, "rev-parse", f"{store.REF}:{'/'.join(layout.entry_path(ANCHOR, 1))}").strip()
    loose = Path(moved.repo.path) / "objects" / middle[:2] / middle[2:]
    kept = loose.read_bytes()
    loose.unlink()  # a small ledger's objects are loose
    assert subprocess.run(["git", "-C", str(moved.root), "cat-file", "-e", middle], check=False).returncode
    drop_cache(moved)
    snap = store.load(moved.repo, RID)
    assert snap.generation == "" and snap.state is not None and snap.state.current_state == "review"
    with pytest.raises(GuardError) as info:
        engine.transition(moved.repo, BACK)
    assert info.value.error_type == "ledger_corrupt" and middle in info.value.message
    loose.write_bytes(kept)
    drop_cache(moved)
    assert engine.transition(moved.repo, BACK)["status"] == "applied"
    record = running.parse(state_blob(moved) or b"")
    assert record is not None and (record.lines, record.current_state) == (5, "draft")


def lie(ws: Workspace, **fields: object) -> bytes:
    record = running.parse(state_blob(ws) or b"")
    assert record is not None
    return running.render(replace(record, **fields))  # type: ignore[arg-type]


TAMPERED: dict[str, Callable[[Workspace], bytes]] = {
    "current_state": lambda ws: lie(ws, current_state="review"),
    "head": lambda ws: lie(ws, head="0" * 64),
    "fewer lines": lambda ws: lie(ws, lines=2),
    "more lines": lambda ws: lie(ws, lines=9),
    "old policy": lambda ws: lie(ws, graph_version=1, policy_line=0),
    "garbage": lambda ws: b"{not json\n",
    "not canonical": lambda ws: json.dumps(json.loads(state_blob(ws) or b"")).encode() + b"\n",
    "duplicate key": lambda ws: (state_blob(ws) or b"").replace(b'{"checksum"', b'{"lines":1,"checksum"'),
}


@pytest.mark.parametrize("how", sorted(TAMPERED))
def test_a_tampered_state_is_a_break_and_no_writer_uses_it(moved: Workspace, how: str) -> None:
    signedops.upgrade(moved.repo, UPGRADE)
    engine.transition(moved.repo, {**MOVE, "idempotency_key": "k"})
    engine.transition(moved.repo, BACK)  # 6 lines, at draft, policy at line 3 (v2)
    assert verify_repository(moved.repo).ok  # and recorded as verified
    put_state(moved, TAMPERED[how](moved))
    for fresh in (False, True):  # a warm verify does not take the old answer either
        if fresh:
            drop_cache(moved)
        report = verify_repository(moved.repo)
        assert not report.ok
        (brk,) = report.breaks
        assert brk.resource_id == RID and brk.anchor == ANCHOR and "running-state blob" in brk.message
        assert "\n" not in str(brk)
    drop_cache(moved)  # the writer with no cache: the lie is not consistent with the lines
    snap = store.load(moved.repo, RID)
    assert snap.generation != "" and snap.state is not None  # read in full
    assert (snap.state.current_state, snap.state.graph_version) == ("draft", 2)
    drop_cache(moved)
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k"})["status"] == "replayed"
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"
    assert state_blob(moved) == running.render(running.of_state(folded(moved)))
    assert verify_repository(moved.repo).ok  # the append wrote a true state again


def test_a_state_that_is_not_a_blob_or_has_no_ledger_is_a_break(moved: Workspace) -> None:
    put_state(moved, state_blob(moved) or b"", as_tree=True)
    (brk,) = verify_repository(moved.repo).breaks
    assert "is not one the guard writes" in brk.message
    put_state(moved, None)
    repo, old = moved.repo, tip(moved)
    ghost = notes.anchor_id(store.anchor_content("svc:ghost"))
    new = notes.insert(repo, notes.tree_of(repo, old), [running.STATE, ghost], repo.create_blob(b"{}\n"))
    notes.commit(repo, store.REF, old, new, "a state for no ledger\n")
    (brk,) = verify_repository(moved.repo).breaks
    assert brk.anchor == ghost and "for no ledger" in brk.message


def test_a_lie_consistent_with_the_lines_it_names_misleads_only_the_writer(moved: Workspace) -> None:
    """The limit of the writer's check: a record naming an older policy line, under which
    the last line is also legal, cannot be told from the truth without reading the lines
    between. The writer then works under that policy, as it would under a forged line,
    and verify refuses both the record and what was written under it."""
    signedops.upgrade(moved.repo, UPGRADE)  # line 4: graph_version 2
    engine.transition(moved.repo, MOVE)  # its edge has the same predicates under both
    v1 = folded(moved).entries[0]["payload_digest"]
    put_state(moved, lie(moved, graph_version=1, policy_line=0, checksum=v1))
    (brk,) = verify_repository(moved.repo).breaks
    assert "(graph_version, policy_line, checksum)" in brk.message
    drop_cache(moved)
    snap = store.load(moved.repo, RID)
    assert snap.generation == "" and snap.state is not None and snap.state.graph_version == 1
    signedops.upgrade(moved.repo, UPGRADE)  # believed to be the first upgrade
    (brk,) = verify_repository(moved.repo).breaks
    assert brk.line == 6 and "graph_version 2 does not follow 2" in brk.message


def test_review_refuses_a_tampered_state(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("alice@example.com"))
    base = ws.pin("main: no ledgers yet")
    git(ws.root, "checkout", "-q", "-b", "feature")
    ws.commit({"NOTES.md": "n\n"}, "feature work")
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    engine.transition(ws.repo, MOVE)
    ws.pin()
    assert review(ws.repo, base).ok
    put_state(ws, lie(ws, current_state="draft"))
    ws.pin()
    report = review(ws.repo, base)
    assert not report.ok
    assert [b.message for b in report.verify.breaks] == [
        "the running-state blob does not match the ledger's first 2 lines (current_state)"
    ]
    assert "running-state blob" in report.markdown()


def test_a_missing_state_falls_back_and_the_next_append_writes_it(moved: Workspace) -> None:
    put_state(moved, None)
    assert verify_repository(moved.repo).ok  # an older ledger: nothing to check
    drop_cache(moved)
    snap = store.load(moved.repo, RID)
    assert snap.generation != ""  # folded in full
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"
    assert state_blob(moved) == running.render(running.of_state(folded(moved)))
    assert verify_repository(moved.repo).ok


def test_an_older_writers_append_leaves_a_stale_state_that_is_no_break(moved: Workspace) -> None:
    stale = state_blob(moved)
    engine.transition(moved.repo, MOVE)
    put_state(moved, stale)  # as a writer older than the running state leaves it
    assert folded(moved).length == 4
    report = verify_repository(moved.repo)
    assert report.ok and report.entries == 4  # true of its first 3 lines: stale, not forged
    drop_cache(moved)
    assert store.load(moved.repo, RID).generation != ""  # not used: it names 3 of 4 lines
    code, out = migrate_cli(moved)
    assert (code, out["status"], out["migrated"], out["states"]) == (0, "migrated", 0, 1)
    assert state_blob(moved) == running.render(running.of_state(folded(moved)))
    assert migrate_cli(moved)[1]["status"] == "up_to_date"
    drop_cache(moved)
    snap = store.load(moved.repo, RID)
    assert snap.generation == "" and snap.state is not None and snap.state.length == 4


def test_appends_across_clones_keep_the_state_true(moved: Workspace, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(moved.root, "remote", "add", "origin", str(bare))
    git(moved.root, "push", "-q", "origin", "HEAD:refs/heads/main", f"{store.REF}:{store.REF}")
    other_root = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other_root))
    git(other_root, "fetch", "-q", "origin", f"{store.REF}:{store.REF}")
    other = Workspace(other_root, tmp_path)
    (other_root / "NOTES.md").write_text("n\n")
    # a fresh clone has no cache: it appends from the state it fetched
    assert store.load(other.repo, RID).generation == ""
    assert engine.transition(other.repo, {**MOVE, "idempotency_key": "k"})["status"] == "applied"
    git(other_root, "push", "-q", "origin", f"{store.REF}:{store.REF}")
    git(moved.root, "fetch", "-q", "origin", f"{store.REF}:{store.REF}")
    # the first clone resumes from its cache, catches up the fetched line, and appends
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k"})["status"] == "replayed"
    assert engine.transition(moved.repo, BACK)["status"] == "applied"
    git(moved.root, "push", "-q", "origin", f"{store.REF}:{store.REF}")
    git(other_root, "fetch", "-q", "origin", f"{store.REF}:{store.REF}")
    for ws in (moved, other):
        assert state_blob(ws) == running.render(running.of_state(folded(ws)))
        assert verify_repository(ws.repo).ok
    drop_cache(other)
    assert engine.transition(other.repo, {**MOVE, "idempotency_key": "k"})["status"] == "replayed"
    assert engine.transition(other.repo, MOVE)["status"] == "applied"
    assert folded(other).length == 6 and verify_repository(other.repo).ok


WORKER = """
import shutil, sys
from strato.guard import cache, engine
from strato.guard.errors import GuardError
from tropo.git import repo
r = repo.require(sys.argv[1])
done = 0
while done < int(sys.argv[2]):
    shutil.rmtree(cache.GuardCache(r).root, ignore_errors=True)  # every append uncached
    state = engine.history(r, {"resource_id": "svc:running"})["current_state"]
    nxt = "b" if state == "a" else "a"
    try:
        out = engine.transition(r, {"resource_id": "svc:running", "from_state": state, "to_state": nxt})
    except GuardError as exc:  # another process moved it first
        if exc.error_type != "stale_from_state":
            raise
        continue
    done += out["status"] == "applied"
"""


def test_concurrent_uncached_appends_keep_the_state_true(ws: Workspace) -> None:
    engine.register(ws.repo, {"resource_id": RID, "graph": {"a": ["b"], "b": ["a"]}, "initial": "a"})
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(ws.root), "6"], stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    state = folded(ws)
    assert state.length == 1 + 3 * 6  # a loser of a race wrote nothing and tried again
    assert state_blob(ws) == running.render(running.of_state(state))
    assert verify_repository(ws.repo).ok
    commits = git(ws.root, "rev-list", "--count", store.REF).strip()
    assert commits == str(state.length)  # one notes commit per line, none overwritten


def test_after_matches_the_fold_for_every_kind_of_line(moved: Workspace) -> None:
    signedops.upgrade(moved.repo, UPGRADE)
    engine.transition(moved.repo, MOVE)
    refused = {"resource_id": RID, "from_state": "review", "to_state": "released"}
    assert engine.transition(moved.repo, refused)["status"] == "refused"  # no PASSED file
    engine.transition(moved.repo, BACK)
    entries = folded(moved).entries
    assert {(e["kind"], e["outcome"]) for e in entries} == {
        ("register", "registered"),
        ("transition", "applied"),
        ("transition", "refused"),
        ("graph_version", "graph_version"),
    }
    record = None
    for n, entry in enumerate(entries, 1):
        record = running.after(record, entry)
        assert record == running.of_state(ledger.fold(entries[:n], RID))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 200))
def test_parse_accepts_only_what_render_writes(noise: bytes, at: int) -> None:
    record = running.Running(3, "a" * 64, "draft", 2, 1, "c" * 64)
    good = running.render(record)
    assert running.parse(good) == record
    mutated = good[:at] + noise + good[at + len(noise) :]
    parsed = running.parse(mutated)
    assert parsed is None or running.render(parsed) == mutated


@pytest.mark.parametrize(
    "field,value",
    [("lines", True), ("lines", 0), ("policy_line", 3), ("policy_line", -1), ("graph_version", 0),
     ("head", ""), ("current_state", 5), ("v", 2), ("lines", 3.0), ("policy_line", "1")],
)
def test_parse_refuses_out_of_range_fields(field: str, value: object) -> None:
    body = {"v": 1, **asdict(running.Running(3, "a" * 64, "draft", 2, 1, "c" * 64)), field: value}
    data = (json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n").encode()
    assert running.parse(data) is None


def test_a_last_line_whose_digest_does_not_match_its_bytes_is_not_resumed_from(moved: Workspace) -> None:
    """The record names the last line's stated digest; the line's bytes must hash to it."""
    record = state_blob(moved)
    lines = ledger_text(moved, ANCHOR).splitlines(keepends=True)
    lines[-1] = re.sub(r'"ts_ms":\s*\d+', '"ts_ms":1', lines[-1])
    put_ledger(moved, ANCHOR, "".join(lines))
    put_state(moved, record)  # the record still names that digest and that state
    drop_cache(moved)
    with pytest.raises(GuardError, match="entry_digest does not match the entry"):
        store.load(moved.repo, RID)  # read in full, and refused


def test_a_writer_with_no_cache_takes_the_record_when_the_last_line_holds_the_policy(ws: Workspace) -> None:
    """The record is used (not read in full) with only the register line, and with an
    upgrade as line 1: the policy line is the last line, and the first line is not."""
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    for step in ("register", "upgrade"):
        if step == "upgrade":
            signedops.upgrade(ws.repo, UPGRADE)
        drop_cache(ws)
        snap = store.load(ws.repo, RID)
        assert snap.generation == "" and snap.state is not None, step  # the record, not a fold
        assert running.of_state(snap.state) == running.of_state(folded(ws))
        shown = engine.history(ws.repo, {"resource_id": RID})  # answered from the record too
        assert (shown["resource_id"], shown["ledger"]) == (RID, folded(ws).entries)
        assert snap.state.entries == folded(ws).entries  # read when asked for
    record = running.parse(state_blob(ws) or b"")
    assert record is not None and (record.lines, record.policy_line, record.graph_version) == (2, 1, 2)


def resume_from(lines: list[bytes], record: running.Running) -> ledger.State | None:
    """The writer's check alone: ``lines`` as the ledger, ``record`` as its running state."""
    text = b"".join(lines).decode()
    return cache.from_running(
        running.render(record),
        RID,
        len(lines),
        lambda n: lines[n],
        lambda: ledger.load(text, RID).by_key,
        lambda: ledger.load(text, RID).entries,
    )


FORGED: dict[str, tuple[dict[str, Any], str]] = {  # a last line that is sound by its digest but no guard writes: (fields, state after)
    "an edge the policy lacks": ({"from_state": "draft", "to_state": "released"}, "released"),
    "an unsigned deviation": (
        {"kind": "deviation", "outcome": "deviation", "resolved_by": "human", "verdict": {}},
        "review",
    ),
}


@pytest.mark.parametrize("how", sorted(FORGED))
def test_a_record_true_of_a_forged_last_line_is_not_resumed_from(moved: Workspace, how: str) -> None:
    """The record agrees with the last line; the last line is not a legal step under the
    policy the record names, so the writer reads the ledger instead (and its fold or
    verify refuses it)."""
    lines = [line.encode() for line in ledger_text(moved, ANCHOR).splitlines(keepends=True)]
    state = folded(moved)
    fields, after = FORGED[how]
    base = {k: v for k, v in state.entries[1].items() if k != "entry_digest"}  # draft->review
    entry, line = seal({**base, **fields, "prev_digest": state.head})
    true = running.of_state(state)
    assert resume_from(lines, true) is not None  # the honest ledger and record resume
    record = replace(true, lines=4, head=entry["entry_digest"], current_state=after)
    assert resume_from([*lines, line.encode()], record) is None


def test_a_record_true_of_a_policy_change_that_moves_the_state_is_not_resumed_from(moved: Workspace) -> None:
    """A policy change stays at the current state (the fold refuses one that does not);
    a last line that moves, with a record that agrees with it, is not taken either."""
    signedops.upgrade(moved.repo, UPGRADE)  # line 3: draft -> draft under graph_version 2
    lines = [line.encode() for line in ledger_text(moved, ANCHOR).splitlines(keepends=True)]
    state = folded(moved)
    true = running.of_state(state)
    assert resume_from(lines, true) is not None
    base = {k: v for k, v in state.entries[3].items() if k != "entry_digest"}
    entry, line = seal({**base, "to_state": "parked"})
    for current in ("draft", "parked"):  # whichever end of the line the record names
        record = replace(true, head=entry["entry_digest"], current_state=current)
        assert resume_from([*lines[:3], line.encode()], record) is None, current
    put_ledger(moved, ANCHOR, b"".join([*lines[:3], line.encode()]).decode())
    drop_cache(moved)
    with pytest.raises(GuardError, match="a policy change must stay at the current state"):
        store.load(moved.repo, RID)  # the full fold refuses it


def test_deferred_keys_read_the_ledger_once_and_forget_nothing() -> None:
    reads: list[int] = []
    index: dict[str, dict[str, Any]] = {"k": {"idempotency_key": "k"}}

    def load() -> dict[str, dict[str, Any]]:
        reads.append(1)
        return index

    keys = cache.Deferred(load)
    assert reads == []  # nothing read until a key is asked for
    keys["j"] = {"idempotency_key": "j"}
    assert index["j"] == {"idempotency_key": "j"} and sorted(keys) == ["j", "k"] and len(keys) == 2
    with pytest.raises(TypeError, match=r"^a ledger forgets no idempotency key$"):
        del keys["k"]
    assert "k" in keys and reads == [1]


def test_a_record_that_misnames_the_resource_or_the_policy_line_is_not_resumed_from(
    moved: Workspace,
) -> None:
    """Each lie alone (the record otherwise true of the lines it names) is refused: the
    writer's conditions are each needed, none stands in for another."""
    lines = [line.encode() for line in ledger_text(moved, ANCHOR).splitlines(keepends=True)]
    true = running.of_state(folded(moved))  # 3 lines, policy at line 0
    text = b"".join(lines).decode()
    kept = running.render(true)

    def resume(rid: str, ledger_lines: list[bytes], record: bytes) -> ledger.State | None:
        return cache.from_running(
            record, rid, len(ledger_lines), lambda n: ledger_lines[n],
            lambda: ledger.load(text, RID).by_key, lambda: ledger.load(text, RID).entries,
        )

    assert resume(RID, lines, kept) is not None
    assert resume("svc:other", lines, kept) is None  # another resource's ledger
    # a second copy of the register line, named as the policy line of a later graph version
    assert resume(RID, [lines[0], *lines], running.render(replace(true, lines=4, policy_line=1))) is None
    signedops.upgrade(moved.repo, UPGRADE)  # line 3, graph_version 2
    lines = [line.encode() for line in ledger_text(moved, ANCHOR).splitlines(keepends=True)]
    upgraded = running.of_state(folded(moved))
    assert resume(RID, lines, running.render(upgraded)) is not None
    # the last line changes the policy, but the record names the one before it
    older = replace(upgraded, policy_line=0, graph_version=1, checksum=true.checksum)
    assert resume(RID, lines, running.render(older)) is None


def test_a_record_has_one_encoding_and_keeps_it() -> None:
    """The bytes verify compares are fixed: sorted keys, no spaces, UTF-8 text as is (a
    later writer escaping it would make every such record "not one the guard writes")."""
    record = running.Running(3, "a" * 64, "prüfung", 2, 1, "c" * 64)
    assert running.render(record) == (
        '{"checksum":"' + "c" * 64 + '","current_state":"prüfung","graph_version":2,'
        '"head":"' + "a" * 64 + '","lines":3,"policy_line":1,"v":1}\n'
    ).encode()
    assert running.parse(running.render(record)) == record
