"""Appends resume the folded state the cache remembers of a ledger's lines: the same
answers as a full fold (state, idempotency keys), lines another clone appended are caught
up, and a record that does not describe the ledger's lines is never used."""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from strato.guard import cache, engine, ledgertrees, running, store
from strato.guard.canonical import seal
from strato.guard.errors import GuardError
from tests.support.guard import POLICY, Workspace, ledger_text, put_ledger
from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

RID = "svc:tail"
ANCHOR = notes.anchor_id(store.anchor_content(RID))
MOVE = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
BACK = {"resource_id": RID, "from_state": "review", "to_state": "draft"}


@pytest.fixture
def moved(ws: Workspace) -> Workspace:
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    assert engine.transition(ws.repo, {**MOVE, "idempotency_key": "k1"})["status"] == "applied"
    assert engine.transition(ws.repo, BACK)["status"] == "applied"
    return ws


def record(ws: Workspace) -> cache.Remembered | None:
    """The cache's record of the ledger, when it remembers what the lines fold to."""
    found = cache.GuardCache(ws.repo).record(ANCHOR)
    return found if found is not None and found.fold is not None else None


def state_of(found: cache.Remembered) -> running.Running:
    assert found.fold is not None
    return found.fold


def record_path(ws: Workspace) -> Path:
    return cache.GuardCache(ws.repo).root / "ledgers" / f"{ANCHOR}.json"


def resumed(ws: Workspace) -> bool:
    snap = store.load(ws.repo, RID)
    return snap.generation != "" and snap.state is not None and snap.state.read_entries is not None


def test_a_load_resumes_and_answers_as_a_full_fold(moved: Workspace) -> None:
    found = record(moved)
    assert found is not None and found.lines == 3 and state_of(found).current_state == "draft"
    assert resumed(moved)
    shown = engine.history(moved.repo, {"resource_id": RID})  # answered from the record
    assert (shown["resource_id"], shown["current_state"], shown["graph_version"]) == (RID, "draft", 1)
    snap = store.load(moved.repo, RID)
    assert snap.state is not None and snap.state.current_state == "draft"
    full = [json.loads(line) for line in ledger_text(moved, ANCHOR).splitlines()]
    assert snap.state.entries == full  # read on demand, the same entries
    replay = engine.transition(moved.repo, {**MOVE, "idempotency_key": "k1"})
    assert replay["status"] == "replayed"
    with pytest.raises(GuardError) as info:
        engine.transition(moved.repo, {**BACK, "idempotency_key": "k1"})
    assert info.value.error_type == "idempotency_conflict"


def test_lines_another_clone_appended_are_caught_up(moved: Workspace, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(moved.root, "remote", "add", "origin", str(bare))
    git(moved.root, "push", "-q", "origin", "HEAD:refs/heads/main", f"{store.REF}:{store.REF}")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    git(other, "fetch", "-q", "origin", f"{store.REF}:{store.REF}")
    repo = gitrepo.require(other)
    (other / "NOTES.md").write_text("n\n")
    assert engine.transition(repo, {**MOVE, "idempotency_key": "k2"})["status"] == "applied"
    git(other, "push", "-q", "origin", f"{store.REF}:{store.REF}")
    git(moved.root, "fetch", "-q", "origin", f"+{store.REF}:{store.REF}")
    before = record(moved)
    assert before is not None and before.lines == 3
    snap = store.load(moved.repo, RID)  # resumes at 3 lines and applies the fourth
    assert snap.generation == before.generation and snap.state is not None
    assert snap.state.current_state == "review" and snap.state.length == 4
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k2"})["status"] == (
        "replayed"
    )


def only_this_history(ws: Workspace) -> None:
    """Make the notes tip a root commit of its own tree, with no reflog: the history a
    clone that fetched only these notes has. Its ledgers verify, and the local cache
    still remembers the lines the older history held."""
    tree = git(ws.root, "rev-parse", f"{store.REF}^{{tree}}").strip()
    root = git(ws.root, "commit-tree", tree, "-m", "notes").strip()
    git(ws.root, "update-ref", "-d", store.REF)
    git(ws.root, "update-ref", store.REF, root)


def test_a_rewritten_ledger_is_folded_again_not_resumed(moved: Workspace) -> None:
    first = ledger_text(moved, ANCHOR).splitlines(keepends=True)[0]
    put_ledger(moved, ANCHOR, first)  # someone replaced the ledger with its first line
    snap = store.load(moved.repo, RID)
    assert snap.state is not None and snap.state.length == 1
    assert snap.state.by_key.get("k1") is None
    with pytest.raises(GuardError) as info:  # a transition verifies the history first
        engine.transition(moved.repo, {**MOVE, "idempotency_key": "k1"})
    assert info.value.error_type == "ledger_rewritten"
    only_this_history(moved)
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k1"})["status"] == (
        "applied"
    )


@pytest.mark.parametrize("garbage", ["{", '{"lines": 3}', "[]"])
def test_a_garbage_record_is_a_miss(moved: Workspace, garbage: str) -> None:
    path = record_path(moved)
    path.write_text(garbage)
    snap = store.load(moved.repo, RID)
    assert snap.generation == "" and snap.state is not None  # answered by the notes' running state
    assert snap.state.by_key["k1"]["to_state"] == "review"  # a key reads (and records) the ledger
    assert resumed(moved)


def test_a_record_that_lies_about_its_lines_is_a_miss(moved: Workspace) -> None:
    path = record_path(moved)
    lie = json.loads(path.read_text())
    fold = running.render(replace(state_of(cache.GuardCache(moved.repo).record(ANCHOR)), current_state="review"))
    path.write_text(json.dumps({**lie, "fold": fold.decode(), "blob": "0" * 40}))
    snap = store.load(moved.repo, RID)
    assert snap.state is not None and snap.state.current_state == "draft"


def test_keys_that_cannot_be_recorded_leave_no_record(moved: Workspace) -> None:
    root = cache.GuardCache(moved.repo).root
    shutil.rmtree(root / "keys")
    (root / "keys").write_text("not a directory")
    record_path(moved).unlink()
    assert not resumed(moved) and record(moved) is None  # and it cannot resume later
    replay = engine.transition(moved.repo, {**MOVE, "idempotency_key": "k1"})
    assert replay["status"] == "replayed"  # the full fold still knows the key


FOLD_FIELDS = ("graph_version", "policy_line", "head", "current_state")


@pytest.mark.parametrize(
    "field,value",
    [("lines", -1), ("lines", True), ("lines", "3"), ("graph_version", -1), ("policy_line", None),
     ("blob", ""), ("head", 7), ("current_state", ""), ("generation", None), ("extra", 1),
     ("fold", 7), ("fold", "{}"), ("lines", 4)],
)
def test_a_record_with_an_odd_field_is_a_miss(moved: Workspace, field: str, value: object) -> None:
    path = record_path(moved)
    good = json.loads(path.read_text())
    found = record(moved)
    assert found is not None and found.to_json() == good
    if field in FOLD_FIELDS:  # inside the fold, in the running-state format
        fold = json.loads(good["fold"])
        path.write_text(json.dumps({**good, "fold": json.dumps({**fold, field: value})}))
    else:
        path.write_text(json.dumps({**good, field: value}))
    assert record(moved) is None
    snap = store.load(moved.repo, RID)  # and the load answers without it
    assert snap.state is not None and snap.state.current_state == "draft"


def test_a_key_file_holding_another_keys_entry_is_no_replay(moved: Workspace) -> None:
    """A key's cache file names it; one that holds another key's entry (or no entry) is
    a miss, so the key is looked up in the ledger, never answered with the wrong line."""
    found = record(moved)
    assert found is not None
    keys = cache.GuardCache(moved.repo).keys(ANCHOR, found.generation)
    first = keys["k1"]
    assert first["idempotency_key"] == "k1" and first["to_state"] == "review"
    keys._path("k2").write_bytes(keys._path("k1").read_bytes())
    for junk in (None, b"[]", b"{", b'{"idempotency_key": "k2"}'):
        if junk is not None:
            keys._path("k1").write_bytes(junk)
        with pytest.raises(KeyError):
            keys["k2" if junk is None else "k1"]
    with pytest.raises(KeyError):
        keys["never used"]
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k2"})["status"] == "applied"


def test_a_caught_up_record_is_saved_and_a_new_generation_drops_the_old(
    moved: Workspace, tmp_path: Path
) -> None:
    """After catching up with fetched lines the record names them (the next load applies
    nothing); a full fold of another history leaves one generation of key files."""
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(moved.root), str(other))
    git(other, "fetch", "-q", "origin", f"{store.REF}:{store.REF}")
    (other / "NOTES.md").write_text("n\n")
    for step in (MOVE, BACK):  # two lines to catch up
        assert engine.transition(gitrepo.require(other), step)["status"] == "applied"
    git(moved.root, "fetch", "-q", str(other), f"+{store.REF}:{store.REF}")
    before = record(moved)
    assert before is not None and before.lines == 3
    assert store.load(moved.repo, RID).generation == before.generation  # caught up, not folded
    after = record(moved)
    assert after is not None and (after.lines, state_of(after).current_state) == (5, "draft")
    assert after.generation == before.generation and after.blob != before.blob
    keys_root = cache.GuardCache(moved.repo).root / "keys" / ANCHOR
    two = ledger_text(moved, ANCHOR).splitlines(keepends=True)[:2]
    put_ledger(moved, ANCHOR, "".join(two))  # another history: folded again, a new generation
    store.load(moved.repo, RID)
    again = record(moved)
    assert again is not None and again.generation != before.generation
    assert [p.name for p in keys_root.iterdir()] == [again.generation]


def test_the_key_index_is_looked_up_never_listed_or_emptied(moved: Workspace) -> None:
    """A state resumed from the record holds only the keys it was asked for: listing or
    counting its index would look complete and be wrong, so it refuses."""
    found = record(moved)
    assert found is not None
    keys = cache.GuardCache(moved.repo).keys(ANCHOR, found.generation)
    with pytest.raises(TypeError, match=r"^the key index is looked up, not listed$"):
        list(keys)
    with pytest.raises(TypeError, match=r"^the key index is looked up, not listed$"):
        len(keys)
    with pytest.raises(TypeError, match=r"^a ledger forgets no idempotency key$"):
        del keys["k1"]
    assert keys["k1"]["to_state"] == "review"


@pytest.mark.parametrize("fault", ["edited after sealing", "linked to an older line"])
def test_a_fetched_line_that_does_not_chain_is_never_applied(moved: Workspace, fault: str) -> None:
    """Catching up checks every line appended since the record, the first one too: a line
    that does not hash to its digest, or does not link to the record's head, is a miss,
    and the full read refuses the ledger."""
    entries = [json.loads(line) for line in ledger_text(moved, ANCHOR).splitlines()]
    found = record(moved)
    assert found is not None and found.lines == 3
    base = {k: v for k, v in entries[1].items() if k != "entry_digest"}  # draft->review
    prev = entries[0]["entry_digest"] if fault == "linked to an older line" else entries[2]["entry_digest"]
    sealed, line = seal({**base, "prev_digest": prev})
    if fault == "edited after sealing":
        line = line.replace(f'"ts_ms":{sealed["ts_ms"]}', f'"ts_ms":{sealed["ts_ms"] + 1}')
    put_ledger(moved, ANCHOR, ledger_text(moved, ANCHOR) + line)
    with pytest.raises(GuardError) as info:
        store.load(moved.repo, RID)
    assert info.value.error_type == "ledger_corrupt" and "line 4" in str(info.value)


def fold_next_append(ws: Workspace) -> None:
    """No record of either kind: the next load folds the whole ledger (as after an older
    writer's append on a clone with no cache)."""
    repo, old = ws.repo, gitrefs.read_ref(ws.repo, store.REF)
    tree = notes.tree_of(repo, old)
    assert tree is not None
    notes.commit(repo, store.REF, old, ledgertrees.without_state(repo, tree, ANCHOR), "no running state\n")
    shutil.rmtree(cache.GuardCache(ws.repo).root)


def test_an_append_after_a_full_fold_moves_the_record_and_records_its_key(moved: Workspace) -> None:
    """The state a full fold gave holds its keys in memory: the append records a new key
    in the cache itself, so the next writer, resuming from the record, replays it."""
    fold_next_append(moved)
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"  # no key
    found = record(moved)
    assert found is not None and (found.lines, state_of(found).current_state) == (4, "review")
    assert resumed(moved)  # k1, in the folded lines, was recorded by the fold itself
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k1"})["status"] == "replayed"
    fold_next_append(moved)
    assert engine.transition(moved.repo, {**BACK, "idempotency_key": "k2"})["status"] == "applied"
    assert resumed(moved)
    assert engine.transition(moved.repo, {**BACK, "idempotency_key": "k2"})["status"] == "replayed"


def test_a_fold_whose_keys_cannot_be_recorded_drops_the_old_record(moved: Workspace) -> None:
    """The old record goes before the new keys are written: if they cannot be, no record
    is left naming key files that are gone, and a key is never lost."""
    original = ledger_text(moved, ANCHOR)
    root = cache.GuardCache(moved.repo).root
    shutil.rmtree(root / "keys")
    (root / "keys").write_text("not a directory")
    put_ledger(moved, ANCHOR, "".join(original.splitlines(keepends=True)[:2]))  # another history
    assert store.load(moved.repo, RID).generation == "" and record(moved) is None
    put_ledger(moved, ANCHOR, original)  # and back: the old record would resume it
    only_this_history(moved)  # (a transition refuses a history that rewrote a ledger)
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k1"})["status"] == "replayed"


def test_a_cache_that_cannot_be_written_is_a_miss_not_an_error(moved: Workspace) -> None:
    """No record can be saved (``ledgers`` is not a directory) and no key recorded (the
    generation's directory is not one): every append still lands, answers, and replays."""
    root = cache.GuardCache(moved.repo).root
    found = record(moved)
    assert found is not None
    generation = root / "keys" / ANCHOR / found.generation
    shutil.rmtree(generation)
    generation.write_text("not a directory")
    # resumed from the record: the new key cannot be written, so the record is dropped
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k3"})["status"] == "applied"
    assert record(moved) is None
    shutil.rmtree(root / "ledgers")
    (root / "ledgers").write_text("not a directory")
    assert engine.transition(moved.repo, {**MOVE, "idempotency_key": "k3"})["status"] == "replayed"
    assert engine.transition(moved.repo, BACK)["status"] == "applied"
    assert record(moved) is None and len(ledger_text(moved, ANCHOR).splitlines()) == 5
