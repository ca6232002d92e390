"""Re-deriving this clone's entries of one ledger after another side's: the one way out
of a same-ledger conflict (:mod:`strato.guard.union`).

Two pull requests that appended to one ledger from the same line each hold a chain the
other's cannot follow (every line names the digest of the one before). This rebuilds
the clone's notes on the other side's notes commit, then runs this side's steps again,
each checked as any new step is. A transition re-derives on its own. A signed override
or migrate does not: its signature covers the ledger head it was made at (so that it
cannot be replayed), so the run stops there and asks for the re-sign. The clone's
previous notes tip is returned, so nothing is lost to a wrong call.
"""

from __future__ import annotations

from typing import Any

from strato.guard import engine, ledger, pin, store, union
from strato.guard.errors import GuardError
from strato.guard.layout import Stored
from tropo.git import notes
from tropo.git import refs as gitrefs
from tropo.git.types import Repository

SIGNED = {"deviation": "override", "graph_version": "migrate"}


def _entries(kept: Stored) -> list[dict[str, Any]]:
    try:
        return ledger.parse(kept.data.decode("utf-8"))
    except (UnicodeDecodeError, ledger.LedgerBreak) as exc:
        raise GuardError("ledger_corrupt", f"cannot re-append a broken ledger: {exc}") from None


def _shared(mine: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> int:
    n = 0
    while n < min(len(mine), len(theirs)) and mine[n]["entry_digest"] == theirs[n]["entry_digest"]:
        n += 1
    return n


def _start(repo: Repository, local: str, onto: str, anchor: str) -> str:
    """A notes commit on ``onto`` holding its ledger of ``anchor`` and every other ledger
    of ``local``'s (a descendant of ``onto`` only: ``local``'s lines of ``anchor`` go)."""
    tree = union.merged_tree(repo, onto, local, skip=anchor)
    base = notes.tree_of(repo, onto)
    if base is not None and tree == base.id:
        return onto
    try:
        return notes.make_commit(repo, [onto], tree, "guard: reappend onto the other side\n")
    except notes.SigningError as exc:
        raise GuardError("signing_failed", str(exc)) from None


def reappend(repo: Repository, resource_id: str, onto: str) -> dict[str, Any]:
    """Move this clone's entries of ``resource_id`` past ``onto``'s; what was re-derived,
    and where and why it stopped."""
    onto = pin.require_commit(repo, onto, "the other side's")
    local = gitrefs.read_ref(repo, store.REF)
    anchor = notes.anchor_id(store.anchor_content(resource_id))
    sides = [{k.anchor: k for k in store.ledgers(repo, tip)}.get(anchor) for tip in (local, onto)]
    if sides[0] is None or sides[1] is None:
        why = "has no ledger on both sides: nothing to re-append"
        raise GuardError("invalid_usage", f"{resource_id!r} {why}")
    mine, theirs = _entries(sides[0]), _entries(sides[1])
    shared = _shared(mine, theirs)
    if shared == 0:
        raise GuardError(
            "notes_conflict",
            f"both sides registered {resource_id!r}: keep one side's ledger (a ledger has one register line)",
        )
    assert local is not None
    start = _start(repo, local, onto, anchor)
    gitrefs.cas_ref(repo, store.REF, start, local, f"guard: reappend {resource_id[:80]} onto {onto[:12]}")
    gitrefs.forget_log(repo, store.REF)  # a rewind on purpose; ``previous_tip`` keeps the old one
    done, stopped = 0, None
    for line, entry in enumerate(mine[shared:], shared + 1):
        kind = entry["kind"]
        if kind != "transition":
            what = SIGNED.get(kind, kind)
            stopped = (
                f"line {line} is a {what}: its signature covers the ledger head it was "
                f"made at, so sign it again (`strato guard authorize`, then `strato guard {what}`)"
            )
            break
        req = {"resource_id": resource_id, "from_state": entry["from_state"], "to_state": entry["to_state"]}
        try:
            engine.transition(repo, req)
        except GuardError as exc:
            stopped = f"line {line}: {exc.error_type}: {exc.message}"
            break
        done += 1
    return {
        "status": "reappended" if stopped is None else "stopped",
        "resource_id": resource_id,
        "onto": onto,
        "previous_tip": local,
        "reappended": done,
        "left": len(mine) - shared - done,
        "reason": stopped,
    }
