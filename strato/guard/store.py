"""Where ledgers live: on ``refs/notes/vivary/guard``, one entry blob per ledger line.

Each resource has a fixed anchor blob derived from its id, so every clone finds the same
ledger at the same address; :mod:`strato.guard.layout` says where its lines are in the
notes tree, :mod:`strato.guard.ledgertrees` builds the trees a write leaves, and
:mod:`strato.guard.append` appends. A ledger in the older layout (the whole ledger as the
note) is still read, and is moved to entry blobs by its next append or by :func:`migrate`.

Beside the lines, ``state/<anchor>`` holds the ledger's running state
(:mod:`strato.guard.running`), rewritten by every append in the same notes commit: a
writer with no local cache checks it against the last line and the policy line and
folds nothing. It is the writer's bytes, so verify checks it and never uses it.

Writes are compare-and-swap on the notes ref: a writer that lost a race re-reads and
re-checks instead of overwriting.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strato.guard import cache, ledger, running
from strato.guard.errors import GuardError
from strato.guard.layout import (
    LEDGERS,
    Stored,
    line_count,
    lines_of,
    lines_tree,
    marker,
    prefix_id,
    read_line,
    running_blob,
    stored,
)
from strato.guard.ledgertrees import with_lines, with_state
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git.types import Repository, Tree

REF = "refs/notes/vivary/guard"
ANCHOR_PREFIX = b"vivary-guard-anchor\n"
MAX_ATTEMPTS = 50


def anchor_content(resource_id: str) -> bytes:
    return ANCHOR_PREFIX + resource_id.encode("utf-8")


def guard_id(resource_id: str) -> str:
    """Stratum's guard id: the first 32 hex of sha256(resource_id)."""
    return hashlib.sha256(resource_id.encode("utf-8")).hexdigest()[:32]



def ledgers(repo: Repository, tip: str | None) -> list[Stored]:
    """Every ledger (and every other note) at the notes commit ``tip``, by anchor."""
    tree = notes.tree_of(repo, tip)
    found: dict[str, str | None] = dict(notes.blobs(repo, tip))
    for where in (LEDGERS, running.STATE):
        top = tree[where] if tree is not None and where in tree else None
        if isinstance(top, Tree):
            for item in top:
                found.setdefault(item.name or "", None)
    verified = cache.GuardCache(repo)
    return [stored(repo, tree, anchor, found[anchor], verified) for anchor in sorted(found)]


@dataclass(frozen=True)
class LedgerSnapshot:
    """One resource's ledger as one notes commit has it."""

    tip: str | None
    resource_id: str
    state: ledger.State | None
    raw: bytes = b""  # the older layout's note (only read for it)
    legacy: bool = False  # kept as one note: the next append moves it to entry blobs
    lines: int = 0
    generation: str = ""  # the cached fold this came from or was recorded as


def parse_ledger(
    anchor: str,
    blob: str,
    data: bytes,
    verified: cache.GuardCache,
    prefix: Callable[[int], str] | None = None,
) -> list[dict[str, Any]]:
    """The entries of the ledger ``blob`` (``data``), digests and links checked for every
    line the cache has not seen for this anchor; raises :class:`ledger.LedgerBreak`.
    ``prefix`` is :meth:`Stored.prefix` for a ledger kept as line blobs."""
    record = verified.record(anchor)
    if prefix is not None and record is not None and record.blob != blob:
        known = record.lines if prefix(record.lines) == record.blob else 0
    else:
        known = cache.known_lines(record, blob, data)
    try:
        found = ledger.parse(data.decode("utf-8"), known)
    except UnicodeDecodeError:
        raise ledger.LedgerBreak(1, "ledger is not UTF-8") from None
    if known < len(found) and not (record is not None and record.fold is not None and known):
        verified.save(anchor, cache.Remembered(blob, len(data), len(found)))
    return found


def load(repo: Repository, resource_id: str, tip: str | None = None) -> LedgerSnapshot:
    """``resource_id``'s ledger at ``tip`` (default: the notes ref), folded; resumed from
    what is remembered of its lines when it can be (:func:`strato.guard.cache.resume`), so
    the cost does not grow with the ledger. ``state.entries`` is read when asked for."""
    tip = gitrefs.read_ref(repo, REF) if tip is None else tip
    anchor = notes.anchor_id(anchor_content(resource_id))
    tree = notes.tree_of(repo, tip)
    note = notes.note_blob(repo, tip, anchor)
    verified = cache.GuardCache(repo)
    lines = lines_tree(tree, anchor)

    def full() -> tuple[Stored, list[dict[str, Any]]]:
        found = stored(repo, tree, anchor, note)
        if found.problem is not None:
            raise GuardError("ledger_corrupt", f"ledger of {resource_id!r}: {found.problem}")
        try:
            return found, parse_ledger(anchor, found.blob, found.data, verified, found.prefix)
        except ledger.LedgerBreak as exc:
            raise exc.as_guard_error(resource_id) from None

    @functools.cache
    def folded() -> LedgerSnapshot:
        found, entries = full()
        if not entries:
            return LedgerSnapshot(tip, resource_id, None)
        try:
            state = ledger.fold(entries, resource_id)
        except ledger.LedgerBreak as exc:
            raise exc.as_guard_error(resource_id) from None
        generation = "" if found.legacy else verified.remember(anchor, found.blob, len(found.data), state)
        return LedgerSnapshot(tip, resource_id, state, found.data, found.legacy, len(entries), generation)

    if lines is not None and note is not None and notes.blob_data(repo, note) == marker(anchor):
        count = line_count(tree, anchor)
        kept = running_blob(tree, anchor)
        try:
            resumed = cache.resume(
                verified,
                anchor,
                resource_id,
                count,
                functools.partial(prefix_id, lines),
                functools.partial(read_line, lines, anchor),
                kept[1] if kept is not None else None,
                lambda: require(folded()),
                lambda: full()[1],
            )
        except (KeyError, ValueError):  # a line its names promise is missing or not a blob:
            resumed = None  # no record is true of it, and the full read says what is wrong
        if resumed is not None:
            return LedgerSnapshot(tip, resource_id, resumed[0], lines=count, generation=resumed[1])
    return folded()


def require(snap: LedgerSnapshot) -> ledger.State:
    if snap.state is None:
        raise GuardError("guard_not_found", f"no guard is registered for {snap.resource_id!r}")
    return snap.state



def find_entry(repo: Repository, digest: str) -> dict[str, Any] | None:
    """The entry with ``digest`` in any ledger whose chain holds, or None."""
    if len(digest) != 64:
        return None
    for kept in ledgers(repo, gitrefs.read_ref(repo, REF)):
        if digest.encode() not in kept.data:
            continue
        try:
            found = ledger.parse(kept.data.decode("utf-8"))
        except (UnicodeDecodeError, ledger.LedgerBreak):
            continue
        for entry in found:
            if entry["entry_digest"] == digest:
                return entry
    return None



def _missing_states(repo: Repository, tip: str | None, found: list[Stored]) -> dict[str, bytes]:
    """The running-state blob of each ledger that folds, where it lacks that very blob
    (none yet, an older writer's append since, or bytes that are not true of it)."""
    wanted: dict[str, bytes] = {}
    for kept in found:
        rid = ledger.resource_of(kept.first_line) if kept.problem is None else None
        if rid is None or notes.anchor_id(anchor_content(rid)) != kept.anchor:
            continue
        try:
            state = load(repo, rid, tip).state
        except GuardError:  # a broken ledger: verify names it, and no record is true of it
            continue
        want = running.render(running.of_state(state)) if state is not None else None
        if want is not None and kept.running != want:
            wanted[kept.anchor] = want
    return wanted


def migrate(repo: Repository) -> dict[str, Any]:
    """Move every ledger still kept as one note to entry blobs, and write the running
    state of every ledger that lacks it, in one notes commit.

    Idempotent (nothing left to do writes nothing) and compare-and-swap: when another
    writer moved the ref first, start again from its tip. The bytes of every ledger stay
    the same, so every digest and the append-only history check still hold.
    """
    for _ in range(MAX_ATTEMPTS):
        tip = gitrefs.read_ref(repo, REF)
        found = ledgers(repo, tip)
        moved = [s for s in found if s.problem is None and s.legacy]
        states = _missing_states(repo, tip, found)
        if not moved and not states:
            return {"status": "up_to_date", "ref": REF, "tip": tip, "migrated": 0, "states": 0}
        tree = notes.tree_of(repo, tip)
        for kept in moved:
            tree = with_lines(repo, tree, kept.anchor, lines_of(kept.data))
        for anchor, data in states.items():
            assert tree is not None
            staged = repo[with_state(repo, tree.id, anchor, data)]
            assert isinstance(staged, Tree)
            tree = staged
        assert tree is not None
        first = moved[0].anchor if moved else next(iter(states))
        new_tree = notes.keep_anchors(repo, tree.id, tip, first)
        try:
            new_tip = notes.commit(repo, REF, tip, new_tree, "guard: migrate-store\n")
        except notes.SigningError as exc:
            raise GuardError("signing_failed", str(exc)) from None
        except gitrefs.RefRaceError:
            continue
        return {
            "status": "migrated",
            "ref": REF,
            "tip": new_tip,
            "migrated": len(moved),
            "states": len(states),
        }
    raise GuardError("ledger_busy", f"{REF} kept moving; try again")
