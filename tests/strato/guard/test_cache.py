"""The verification cache under .git/vivary/guard: hits repeat what a fresh check says,
appends are checked line by line, and a deleted, corrupt or outdated cache changes no
verdict."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from strato.guard import cache, engine, signedops, store
from strato.guard.errors import GuardError
from strato.guard.verify import verify_repository
from tests.support.guard import (
    POLICY,
    Key,
    Workspace,
    ledger_text,
    put_ledger,
    ssh_sign,
)
from tests.support.repos import git
from tropo.git import notes
from tropo.git import refs as gitrefs

RID = "svc:cached"
MOVE = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
BACK = {"resource_id": RID, "from_state": "review", "to_state": "draft"}


def anchor() -> str:
    return notes.anchor_id(store.anchor_content(RID))


def note_blob(ws: Workspace) -> str:
    """The oid of the ledger's bytes as one blob: what the cache is keyed by."""
    (kept,) = [s for s in store.ledgers(ws.repo, gitrefs.read_ref(ws.repo, store.REF))]
    return kept.blob


def cache_dir(ws: Workspace) -> Path:
    return cache.GuardCache(ws.repo).root


def put(ws: Workspace, text: str) -> None:
    put_ledger(ws, anchor(), text)


@pytest.fixture
def moved(ws: Workspace) -> Workspace:
    """A resource moved back and forth: 1 register + 6 transitions."""
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    for _ in range(3):
        assert engine.transition(ws.repo, MOVE)["status"] == "applied"
        assert engine.transition(ws.repo, BACK)["status"] == "applied"
    return ws


def test_every_append_leaves_the_new_blob_known(moved: Workspace) -> None:
    chain = cache.GuardCache(moved.repo).record(anchor())
    assert chain is not None
    assert (chain.blob, chain.lines) == (note_blob(moved), 7)
    assert cache_dir(moved).is_relative_to(Path(moved.repo.path).resolve() / "vivary")


def test_known_lines_only_for_the_same_bytes_or_an_append(moved: Workspace) -> None:
    data = ledger_text(moved, anchor()).encode()
    first4 = b"".join(data.splitlines(keepends=True)[:4])
    chain = cache.Remembered(str(notes.anchor(moved.repo, first4)), len(first4), 4)
    assert cache.known_lines(chain, note_blob(moved), data) == 4  # an append of 3 lines
    assert cache.known_lines(chain, chain.blob, first4) == 4
    edited = data.replace(b'"draft"', b'"DRAFT"', 1)
    assert cache.known_lines(chain, str(notes.anchor(moved.repo, edited)), edited) == 0
    lying = cache.Remembered(chain.blob, chain.size, 5)  # line count does not fit the bytes
    assert cache.known_lines(lying, note_blob(moved), data) == 0
    assert cache.known_lines(None, note_blob(moved), data) == 0


def test_cached_and_fresh_verify_agree_and_a_deleted_cache_is_rebuilt(moved: Workspace) -> None:
    first = verify_repository(moved.repo).to_json()
    assert first["ok"] and first["entries"] == 7
    hist = cache.GuardCache(moved.repo).checked_history()
    assert gitrefs.read_ref(moved.repo, store.REF) in hist and len(hist) == 7
    assert verify_repository(moved.repo).to_json() == first  # all hits
    shutil.rmtree(cache_dir(moved))
    assert verify_repository(moved.repo).to_json() == first  # all misses
    assert cache.GuardCache(moved.repo).record(anchor()) is not None
    assert engine.history(moved.repo, {"resource_id": RID})["current_state"] == "draft"


def test_corrupt_cache_files_are_misses(moved: Workspace) -> None:
    verify_repository(moved.repo)
    root = cache_dir(moved)
    for path in root.rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00garbage{" + bytes(range(256)))
    (root / "ledgers" / "x.json").write_text('{"v": 1, "blob": 3}')
    assert verify_repository(moved.repo).ok
    assert engine.transition(moved.repo, MOVE)["status"] == "applied"
    assert verify_repository(moved.repo).entries == 8


def test_a_warm_cache_never_hides_an_edit(moved: Workspace) -> None:
    assert verify_repository(moved.repo).ok
    text = ledger_text(moved, anchor())
    lines = text.splitlines(keepends=True)
    put(moved, "".join(lines[:3]) + lines[3].replace('"applied"', '"refused"') + "".join(lines[4:]))
    report = verify_repository(moved.repo)
    assert not report.ok and report.breaks[0].line == 4
    with pytest.raises(GuardError) as info:
        engine.transition(moved.repo, MOVE)
    assert info.value.error_type == "ledger_corrupt" and "line 4" in info.value.message


def test_a_forged_line_appended_to_a_known_prefix_is_checked(moved: Workspace) -> None:
    verify_repository(moved.repo)
    text = ledger_text(moved, anchor())
    last = json.loads(text.splitlines()[-1])
    forged = {**last, "prev_digest": last["entry_digest"], "from_state": "draft"}
    put(moved, text + json.dumps(forged, sort_keys=True, separators=(",", ":")) + "\n")
    report = verify_repository(moved.repo)
    assert not report.ok and report.breaks[0].line == 8
    assert "edited" in report.breaks[0].message


def test_a_history_rewrite_after_a_warm_verify_is_caught(moved: Workspace) -> None:
    assert verify_repository(moved.repo).ok
    git(moved.root, "notes", "--ref=vivary/guard", "remove", anchor())
    report = verify_repository(moved.repo)
    assert any("deleted in notes commit" in b.message for b in report.breaks)


def test_verified_signatures_are_keyed_by_the_trust_root_they_used(
    ws: Workspace, key: Key
) -> None:
    """An override verified under a signers file is re-checked once its commit is gone
    and the trust root falls back to a HEAD that does not list the signer."""
    git(ws.root, "checkout", "-q", "-b", "signed")
    ws.trust(key.signers_line("alice"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    ask = {"resource_id": RID, "from_state": "draft", "to_state": "review", "rationale": "ok"}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    signedops.override(ws.repo, {**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)})
    report = verify_repository(ws.repo)
    assert report.ok and report.entries == 2
    chain = cache.GuardCache(ws.repo).record(anchor())
    assert chain is not None and chain.verified is not None and len(chain.verified) == 1
    assert verify_repository(ws.repo).ok  # a hit
    # drop the branch that trusted alice, and its commits: the entry's git_head is gone
    git(ws.root, "checkout", "-q", "-")
    git(ws.root, "branch", "-q", "-D", "signed")
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    git(ws.root, "gc", "-q", "--prune=now")
    report = verify_repository(ws.repo)
    assert not report.ok and report.breaks[0].line == 2
    assert "allowed_signers" in report.breaks[0].message
