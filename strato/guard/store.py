"""Where ledgers live: one git note per resource on ``refs/notes/vivary/guard``.

The note hangs on a fixed anchor blob derived from the resource id, so every clone
finds the same ledger at the same address. Appends are compare-and-swap on the notes
ref: a writer that lost a race re-reads and re-checks instead of overwriting.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from strato.guard import cache, ledger
from strato.guard.canonical import seal
from strato.guard.errors import GuardError
from tropo.git import notes
from tropo.git import repo as gitrepo

REF = "refs/notes/vivary/guard"
ANCHOR_PREFIX = b"vivary-guard-anchor\n"
MAX_ATTEMPTS = 50
MAX_LOCK_WAITS = 20  # about two seconds in all


def anchor_content(resource_id: str) -> bytes:
    return ANCHOR_PREFIX + resource_id.encode("utf-8")


def guard_id(resource_id: str) -> str:
    """Stratum's guard id: the first 32 hex of sha256(resource_id)."""
    return hashlib.sha256(resource_id.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Snapshot:
    """One resource's ledger as one notes commit has it."""

    tip: str | None
    resource_id: str
    state: ledger.State | None
    raw: bytes = b""


def parse_ledger(
    anchor: str, blob: str, data: bytes, verified: cache.GuardCache
) -> list[dict[str, Any]]:
    """The entries of the ledger blob ``blob`` (``data``), digests and links checked for
    every line the cache has not seen for this anchor; raises :class:`ledger.LedgerBreak`."""
    known = cache.known_lines(verified.chain(anchor), blob, data)
    try:
        found = ledger.parse(data.decode("utf-8"), known)
    except UnicodeDecodeError:
        raise ledger.LedgerBreak(1, "ledger is not UTF-8") from None
    if known < len(found):
        verified.save_chain(anchor, cache.Chain(blob, len(data), len(found)))
    return found


def load(repo: pygit2.Repository, resource_id: str, tip: str | None = None) -> Snapshot:
    tip = gitrepo.read_ref(repo, REF) if tip is None else tip
    anchor = notes.anchor_id(anchor_content(resource_id))
    blob = notes.note_blob(repo, tip, anchor)
    if blob is None:
        return Snapshot(tip, resource_id, None)
    data = notes.blob_data(repo, blob)
    try:
        state = ledger.fold(parse_ledger(anchor, blob, data, cache.GuardCache(repo)), resource_id)
    except ledger.LedgerBreak as exc:
        raise exc.as_guard_error(resource_id) from None
    return Snapshot(tip, resource_id, state, data)


def require(snap: Snapshot) -> ledger.State:
    if snap.state is None:
        raise GuardError("guard_not_found", f"no guard is registered for {snap.resource_id!r}")
    return snap.state


# A step decides, from a fresh snapshot, either a response without writing (a dict)
# or the entry to append and how to answer once it is sealed.
Respond = Callable[[dict[str, Any]], dict[str, Any]]
Step = Callable[[Snapshot], dict[str, Any] | tuple[dict[str, Any], Respond]]


def commit(
    repo: pygit2.Repository, resource_id: str, step: Step, read: Snapshot | None = None
) -> dict[str, Any]:
    """Run ``step`` against the newest ledger and append its entry atomically.

    A lost race re-runs ``step`` on the winner's ledger, so every check it makes (state,
    idempotency, policy) holds at the moment of the write. ``read`` is a snapshot the
    caller already loaded; it is used while the notes ref has not moved since.
    """
    target = notes.anchor(repo, anchor_content(resource_id))
    waits = 0
    for _ in range(MAX_ATTEMPTS):
        tip = gitrepo.read_ref(repo, REF)
        snap = read if read is not None and read.tip == tip else load(repo, resource_id, tip)
        read = None
        decided = step(snap)
        if isinstance(decided, dict):
            return decided
        fields, respond = decided
        head = gitrepo.head_commit(repo)
        prev = snap.state.head if snap.state is not None else ""
        entry, line = seal(
            {
                "ts_ms": int(time.time() * 1000),
                **fields,
                "prev_digest": prev,
                "git_head": str(head.id) if head is not None else None,
            }
        )
        message = f"guard: {resource_id[:80]} {entry['kind']} {entry['outcome']}\n"
        data = snap.raw + line.encode("utf-8")
        try:
            notes.write(repo, REF, snap.tip, target, data, message)
        except gitrepo.RefRaceError as exc:
            if exc.actual == snap.tip:  # not moved, only locked: give the holder a moment
                waits += 1
                if waits > MAX_LOCK_WAITS:
                    break
                time.sleep(0.01 * waits)
            continue
        except pygit2.GitError as exc:
            raise GuardError("ledger_busy", f"cannot move {REF}: {exc}") from exc
        # we sealed the new line on a checked chain: the whole new blob chains correctly
        lines = len(snap.state.entries) + 1 if snap.state is not None else 1
        chain = cache.Chain(str(pygit2.hash(data)), len(data), lines)
        cache.GuardCache(repo).save_chain(target, chain)
        return respond(entry)
    lock = Path(repo.path) / (REF + ".lock")
    if lock.exists():
        raise GuardError(
            "ledger_busy",
            f"{lock} exists: another writer holds it, or one was killed; "
            "run `strato guard unlock` (it checks the lock is stale and the ledger sound)",
        )
    raise GuardError("ledger_busy", f"{REF} kept moving; try again")


def find_entry(repo: pygit2.Repository, digest: str) -> dict[str, Any] | None:
    """The entry with ``digest`` in any ledger whose chain holds, or None."""
    if len(digest) != 64:
        return None
    tip = gitrepo.read_ref(repo, REF)
    for blob in notes.blobs(repo, tip).values():
        data = notes.blob_data(repo, blob)
        if digest.encode() not in data:
            continue
        try:
            found = ledger.parse(data.decode("utf-8"))
        except (UnicodeDecodeError, ledger.LedgerBreak):
            continue
        for entry in found:
            if entry["entry_digest"] == digest:
                return entry
    return None
