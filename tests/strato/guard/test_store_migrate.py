"""`strato guard migrate-store` in process (:func:`store.migrate`): every ledger still
kept as one note moves to line blobs and every ledger that folds gets the running state
its lines imply, in one notes commit, compare-and-swap on the notes ref; and the
engine's receipts (:func:`store.find_entry`): an entry is found by its digest in any
ledger whose chain holds, never in one that does not."""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import replace

import pygit2
import pytest

from strato.guard import cache, engine, layout, ledger, ledgertrees, running, store
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from tests.support.guard import POLICY, Key, Workspace, ledger_text, put_ledger
from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

RIDS = ("svc:migrate-a", "svc:migrate-b", "svc:migrate-c", "svc:migrate-d")


def anchor(rid: str) -> str:
    return notes.anchor_id(store.anchor_content(rid))


def tip(ws: Workspace) -> str | None:
    return gitrefs.read_ref(ws.repo, store.REF)


def state_blob(ws: Workspace, at: str) -> bytes | None:
    kept = layout.running_blob(notes.tree_of(ws.repo, tip(ws)), at)
    return None if kept is None else kept[1]


def true_state(ws: Workspace, rid: str) -> bytes:
    """The running state ``rid``'s lines fold to, as an append writes it."""
    return running.render(running.of_state(ledger.load(ledger_text(ws, anchor(rid)), rid)))


def put_state(ws: Workspace, at: str, data: bytes | None) -> None:
    """Replace (or, with None, remove) a running-state blob in a new notes commit."""
    repo, old = ws.repo, tip(ws)
    tree = notes.tree_of(repo, old)
    assert tree is not None
    if data is None:
        new = ledgertrees.without_state(repo, tree, at)
    else:
        new = notes.insert(repo, tree, [running.STATE, at], repo.create_blob(data))
    notes.commit(repo, store.REF, old, new, "hand-edited running state\n")


def register(ws: Workspace, *rids: str) -> None:
    """Each of ``rids`` registered and moved to review and back: three lines."""
    (ws.root / "NOTES.md").write_text("n\n")
    for rid in rids:
        engine.register(ws.repo, {"resource_id": rid, **copy.deepcopy(POLICY)})
        for there, back in (("draft", "review"), ("review", "draft")):
            move = {"resource_id": rid, "from_state": there, "to_state": back}
            assert engine.transition(ws.repo, move)["status"] == "applied"


def older_layout(ws: Workspace, texts: dict[str, str], *, fresh: bool = True) -> None:
    """Each ledger as the older release wrote it: the whole ledger as one git note (made
    with git notes itself: no running state, its anchor not under anchors/), on a fresh
    notes ref unless not ``fresh``. The anchor blobs are in the object store already (the
    engine wrote them)."""
    if fresh:
        git(ws.root, "update-ref", "-d", store.REF)
    note = ws.tmp / "ledger.txt"
    for at, text in texts.items():
        note.write_text(text)
        git(ws.root, "notes", "--ref=vivary/guard", "add", "-f", "-F", str(note), at)


def drop_cache(ws: Workspace) -> None:
    shutil.rmtree(cache.GuardCache(ws.repo).root, ignore_errors=True)


def parent_and_message(ws: Workspace, sha: str) -> tuple[list[str], str]:
    found = ws.repo[sha]
    assert isinstance(found, pygit2.Commit)
    return [str(p) for p in found.parent_ids], found.message


def test_migrate_moves_every_older_ledger_and_writes_its_state(ws: Workspace) -> None:
    a, b, c = RIDS[:3]
    register(ws, a, b)
    texts = {anchor(rid): ledger_text(ws, anchor(rid)) for rid in (a, b)}
    git(ws.root, "update-ref", "-d", store.REF)
    register(ws, c)  # a ledger in today's layout beside them, with its state
    older_layout(ws, texts, fresh=False)
    kept_c = notes.tree_of(ws.repo, tip(ws))
    assert kept_c is not None
    c_lines, c_state = layout.lines_tree(kept_c, anchor(c)), state_blob(ws, anchor(c))
    assert c_lines is not None and c_state == true_state(ws, c)
    before = tip(ws)
    assert before is not None and notes.kept_anchors(ws.repo, before) == {anchor(c)}

    answer = store.migrate(ws.repo)

    after = tip(ws)
    assert answer == {"status": "migrated", "ref": store.REF, "tip": after, "migrated": 2, "states": 2}
    assert after is not None and parent_and_message(ws, after) == ([before], "guard: migrate-store\n")
    found = {kept.anchor: kept for kept in store.ledgers(ws.repo, after)}
    assert sorted(found) == sorted([*texts, anchor(c)])
    for at, text in texts.items():
        assert not found[at].legacy and found[at].problem is None and found[at].lines == 3
        assert found[at].data == text.encode()
        assert notes.read(ws.repo, after, at) == layout.marker(at)
    for rid in (a, b):
        assert state_blob(ws, anchor(rid)) == true_state(ws, rid)
    tree = notes.tree_of(ws.repo, after)
    moved_c = layout.lines_tree(tree, anchor(c))
    assert moved_c is not None and moved_c.id == c_lines.id and state_blob(ws, anchor(c)) == c_state
    assert notes.kept_anchors(ws.repo, after) == {anchor(a), anchor(b), anchor(c)}
    assert verify_repository(ws.repo).ok
    drop_cache(ws)  # a writer with no cache takes the state migrate wrote
    snap = store.load(ws.repo, a)
    assert snap.generation == "" and snap.state is not None and snap.state.current_state == "draft"

    again = store.migrate(ws.repo)  # idempotent: nothing left to do writes nothing
    assert again == {"status": "up_to_date", "ref": store.REF, "tip": after, "migrated": 0, "states": 0}
    assert tip(ws) == after


def test_migrate_writes_a_state_that_is_missing_stale_or_untrue(ws: Workspace) -> None:
    stale, missing, untrue, sound = RIDS
    register(ws, stale, missing, untrue, sound)
    old = state_blob(ws, anchor(stale))
    assert engine.transition(ws.repo, {"resource_id": stale, "from_state": "draft", "to_state": "review"})[
        "status"
    ] == "applied"
    put_state(ws, anchor(stale), old)  # as a writer older than the running state leaves it
    put_state(ws, anchor(missing), None)
    record = running.parse(state_blob(ws, anchor(untrue)) or b"")
    assert record is not None
    put_state(ws, anchor(untrue), running.render(replace(record, current_state="review")))
    sound_state = layout.running_blob(notes.tree_of(ws.repo, tip(ws)), anchor(sound))
    before = tip(ws)

    answer = store.migrate(ws.repo)

    after = tip(ws)
    assert answer == {"status": "migrated", "ref": store.REF, "tip": after, "migrated": 0, "states": 3}
    assert after is not None and parent_and_message(ws, after) == ([before], "guard: migrate-store\n")
    for rid in RIDS:
        assert state_blob(ws, anchor(rid)) == true_state(ws, rid), rid
    assert layout.running_blob(notes.tree_of(ws.repo, after), anchor(sound)) == sound_state
    assert verify_repository(ws.repo).ok
    assert store.migrate(ws.repo)["status"] == "up_to_date" and tip(ws) == after


def anchor_before(ws: Workspace, limit: str, what: str) -> str:
    """An anchor (a blob written for it) that sorts before ``limit``: the walk over the
    ledgers, in anchor order, must go past what is kept there to reach ``limit``."""
    for n in range(64):
        content = f"{what} {n}\n".encode()
        if notes.anchor_id(content) < limit:
            return notes.anchor(ws.repo, content)
    raise AssertionError("no anchor sorts first")


def test_migrate_writes_no_state_for_what_does_not_fold_as_that_resource(ws: Workspace) -> None:
    """A broken ledger, one whose first line names no resource, and one kept under
    another resource's anchor get no running state (verify names them); the one beside
    them that lacks its state still gets it."""
    first, second = sorted(RIDS[:2], key=anchor)
    register(ws, first, second)
    lines = ledger_text(ws, anchor(first)).splitlines(keepends=True)
    put_ledger(ws, anchor(first), "".join([lines[0], lines[1].replace("draft", "released"), lines[2]]))
    put_state(ws, anchor(second), None)  # sorted after the broken ledger: still reached
    garbage, foreign = (anchor_before(ws, anchor(second), what) for what in ("not a ledger", "another resource"))
    put_ledger(ws, garbage, "not a ledger line\n")
    put_ledger(ws, foreign, ledger_text(ws, anchor(second)))
    with pytest.raises(GuardError, match="entry_digest does not match"):
        store.load(ws.repo, first)

    answer = store.migrate(ws.repo)

    assert answer == {"status": "migrated", "ref": store.REF, "tip": tip(ws), "migrated": 0, "states": 1}
    assert state_blob(ws, anchor(second)) == true_state(ws, second)
    assert [state_blob(ws, at) for at in (anchor(first), garbage, foreign)] == [None, None, None]
    assert store.migrate(ws.repo)["status"] == "up_to_date"


def sign_through(ws: Workspace, key: Key, script: str) -> None:
    """Sign notes commits with SSH through ``script``, which runs as git's signing
    program (as another writer's process would, at that very moment) and then signs."""
    program = ws.tmp / "sign.sh"
    program.write_text(f"#!/bin/sh\n{script}\nexec ssh-keygen \"$@\"\n")
    program.chmod(0o755)
    for name, value in (
        ("gpg.format", "ssh"),
        ("user.signingkey", str(key.path)),
        ("vivary.signNotes", "true"),
        ("gpg.ssh.program", str(program)),
    ):
        git(ws.root, "config", name, value)


def test_a_migration_that_loses_a_race_starts_again_from_the_winners_tip(ws: Workspace, key: Key) -> None:
    """The winner moves one of the two older ledgers (no state) while the migration signs
    its commit: the migration's compare-and-swap fails, and it moves the other one on top."""
    first, second = RIDS[:2]
    register(ws, first, second)
    texts = {anchor(rid): ledger_text(ws, anchor(rid)) for rid in (first, second)}
    older_layout(ws, texts)
    repo, before = ws.repo, tip(ws)
    moved = ledgertrees.replace_tree(repo, before, anchor(first), texts[anchor(first)].encode())
    sig = gitrepo.signature(repo)
    assert before is not None
    winner = str(repo.create_commit(None, sig, sig, "winner\n", moved, [pygit2.Oid(hex=before)]))
    assert notes.kept_anchors(repo, winner) == set(texts)  # like any guard write: every annotated blob
    flag = ws.tmp / "raced"
    sign_through(
        ws,
        key,
        f'[ -e {flag} ] || {{ touch {flag}; git --git-dir={repo.path} update-ref {store.REF} {winner} {before}; }}',
    )

    answer = store.migrate(repo)

    after = tip(ws)
    assert flag.exists()
    assert answer == {"status": "migrated", "ref": store.REF, "tip": after, "migrated": 1, "states": 2}
    assert after is not None and parent_and_message(ws, after) == ([winner], "guard: migrate-store\n")
    for rid in (first, second):
        assert ledger_text(ws, anchor(rid)) == texts[anchor(rid)]
        assert state_blob(ws, anchor(rid)) == true_state(ws, rid)
    assert verify_repository(repo).ok


def test_a_migration_that_keeps_losing_gives_up_and_writes_nothing(ws: Workspace, key: Key) -> None:
    register(ws, RIDS[0])
    put_state(ws, anchor(RIDS[0]), None)
    git_dir = ws.repo.path
    sign_through(
        ws,
        key,
        f"old=$(git --git-dir={git_dir} rev-parse {store.REF})\n"
        f"new=$(echo moved | git --git-dir={git_dir} commit-tree --no-gpg-sign \"$old^{{tree}}\" -p \"$old\")\n"
        f"git --git-dir={git_dir} update-ref {store.REF} \"$new\" \"$old\"",
    )
    before = tip(ws)
    with pytest.raises(GuardError) as info:
        store.migrate(ws.repo)
    assert (info.value.error_type, info.value.message) == (
        "ledger_busy",
        f"{store.REF} kept moving; try again",
    )
    count = git(ws.root, "rev-list", "--count", f"{before}..{store.REF}")
    assert int(count) == store.MAX_ATTEMPTS  # one move by the other writer per attempt
    assert state_blob(ws, anchor(RIDS[0])) is None


def test_a_migration_that_cannot_sign_writes_nothing(ws: Workspace) -> None:
    register(ws, RIDS[0])
    put_state(ws, anchor(RIDS[0]), None)
    git(ws.root, "config", "vivary.signNotes", "maybe")
    before = tip(ws)
    with pytest.raises(GuardError) as info:
        store.migrate(ws.repo)
    assert (info.value.error_type, info.value.message) == (
        "signing_failed",
        "git config vivary.signNotes is not a boolean",
    )
    assert tip(ws) == before


def entries(ws: Workspace, rid: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in ledger_text(ws, anchor(rid)).splitlines()]


def test_find_entry_finds_every_entry_of_every_sound_ledger_by_its_digest(ws: Workspace) -> None:
    assert store.find_entry(ws.repo, "0" * 64) is None  # no notes ref yet
    register(ws, *RIDS[:2])
    for rid in RIDS[:2]:
        for entry in entries(ws, rid):
            assert store.find_entry(ws.repo, str(entry["entry_digest"])) == entry
    digest = str(entries(ws, RIDS[1])[1]["entry_digest"])
    assert store.find_entry(ws.repo, "f" * 64) is None
    for near in (digest[:63], digest + "0", digest.upper()):
        assert store.find_entry(ws.repo, near) is None, near


@pytest.mark.parametrize("broken", ["a line changed", "not UTF-8"])
def test_find_entry_never_answers_from_a_ledger_whose_chain_does_not_hold(ws: Workspace, broken: str) -> None:
    """The same entry in two ledgers, the one read first broken: the answer comes from the
    sound one; with both broken there is none."""
    rid = RIDS[0]
    register(ws, rid)
    text = ledger_text(ws, anchor(rid)).encode()
    entry = entries(ws, rid)[1]
    lines = text.splitlines(keepends=True)
    bad = (
        b"".join([*lines[:2], lines[2].replace(b"draft", b"released")])
        if broken == "a line changed"
        else text + b"\xff\n"
    )
    first, second = sorted([anchor(rid), notes.anchor(ws.repo, b"a copy of the ledger\n")])
    repo = ws.repo

    def put(at: str, data: bytes) -> None:
        old = tip(ws)
        notes.commit(repo, store.REF, old, ledgertrees.replace_tree(repo, old, at, data), "edited\n")

    put(first, bad)
    put(second, text)
    assert store.find_entry(repo, str(entry["entry_digest"])) == entry
    put(second, bad)
    assert store.find_entry(repo, str(entry["entry_digest"])) is None


def test_migrate_with_no_notes_ref_writes_nothing(ws: Workspace) -> None:
    answer = store.migrate(ws.repo)
    assert answer == {"status": "up_to_date", "ref": store.REF, "tip": None, "migrated": 0, "states": 0}
    assert tip(ws) is None


def test_an_older_ledger_that_does_not_fold_is_moved_as_it_is_and_gets_no_state(ws: Workspace) -> None:
    """Its bytes move unchanged (verify still names its break, at the same line); no
    running state is true of it."""
    rid = RIDS[0]
    register(ws, rid)
    lines = ledger_text(ws, anchor(rid)).splitlines(keepends=True)
    broken = "".join([lines[0], lines[1].replace("draft", "released"), lines[2]])
    older_layout(ws, {anchor(rid): broken})
    (before,) = verify_repository(ws.repo).breaks

    answer = store.migrate(ws.repo)

    assert answer == {"status": "migrated", "ref": store.REF, "tip": tip(ws), "migrated": 1, "states": 0}
    assert ledger_text(ws, anchor(rid)) == broken and state_blob(ws, anchor(rid)) is None
    (after,) = verify_repository(ws.repo).breaks
    assert (after.line, after.message) == (before.line, before.message)


def test_a_note_under_a_fanout_directory_is_replaced_where_it_is(ws: Workspace) -> None:
    """git notes moves notes into ``aa/bbbb…`` directories once a notes tree is large: the
    marker takes the older ledger's place there, and no second note for it appears."""
    rid = RIDS[0]
    register(ws, rid)
    at, text = anchor(rid), ledger_text(ws, anchor(rid))
    older_layout(ws, {at: text})
    repo, old = ws.repo, tip(ws)
    tree = notes.tree_of(repo, old)
    assert tree is not None
    fanned = repo.TreeBuilder(tree)
    fanned.remove(at)
    sub = repo.TreeBuilder()
    sub.insert(at[2:], repo.create_blob(text.encode()), pygit2.GIT_FILEMODE_BLOB)
    fanned.insert(at[:2], sub.write(), pygit2.GIT_FILEMODE_TREE)
    notes.commit(repo, store.REF, old, fanned.write(), "notes fanned out\n")
    assert notes.read(repo, tip(ws), at) == text.encode()

    assert store.migrate(repo)["migrated"] == 1

    moved = notes.tree_of(repo, tip(ws))
    assert moved is not None and at not in moved and notes.duplicated(repo, tip(ws)) == []
    assert notes.read(repo, tip(ws), at) == layout.marker(at) and ledger_text(ws, at) == text
    assert verify_repository(repo).ok
