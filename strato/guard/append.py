"""Appending one line to a ledger: compare-and-swap on the notes ref, the step re-run
against the winner's ledger whenever a race is lost.

Every append also rewrites the ledger's running state (:mod:`strato.guard.running`) in
the same notes commit, and moves the local record of what the lines fold to
(:mod:`strato.guard.cache`), so the next writer folds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from strato.guard import cache, running
from strato.guard.canonical import seal
from strato.guard.errors import GuardError
from strato.guard.layout import lines_tree, prefix_id
from strato.guard.ledgertrees import append_tree
from strato.guard.store import MAX_ATTEMPTS, REF, LedgerSnapshot, anchor_content, load
from tropo.git import notes, objects
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo
from tropo.git.types import GitError, Repository, Tree

MAX_LOCK_WAITS = 20  # about two seconds in all
GC_EVERY = 256  # appends between two `git gc --auto`, as git's own commands run it


# A step decides, from a fresh snapshot, either a response without writing (a dict)
# or the entry to append and how to answer once it is sealed.
Respond = Callable[[dict[str, Any]], dict[str, Any]]
Step = Callable[[LedgerSnapshot], dict[str, Any] | tuple[dict[str, Any], Respond]]


def commit(
    repo: Repository, resource_id: str, step: Step, read: LedgerSnapshot | None = None
) -> dict[str, Any]:
    """Run ``step`` against the newest ledger and append its entry atomically.

    A lost race re-runs ``step`` on the winner's ledger, so every check it makes (state,
    idempotency, policy) holds at the moment of the write. ``read`` is a snapshot the
    caller already loaded; it is used while the notes ref has not moved since.
    """
    target = notes.anchor(repo, anchor_content(resource_id))
    waits = 0
    unwritten: OSError | None = None
    for _ in range(MAX_ATTEMPTS):
        tip = gitrefs.read_ref(repo, REF)
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
        legacy = snap.raw if snap.legacy else b""
        before = running.of_state(snap.state) if snap.state is not None else None
        state = running.render(running.after(before, entry))
        tree = None
        try:
            tree = append_tree(repo, snap.tip, target, line.encode("utf-8"), state, legacy)
            notes.commit(repo, REF, snap.tip, tree, message)
        except notes.SigningError as exc:
            raise GuardError("signing_failed", str(exc)) from None
        except gitrefs.RefRaceError as exc:
            if exc.actual == snap.tip:  # not moved, only locked: give the holder a moment
                waits += 1
                if waits > MAX_LOCK_WAITS:
                    break
                time.sleep(0.01 * waits)
            continue
        except GitError as exc:
            raise GuardError("ledger_busy", f"cannot move {REF}: {exc}") from exc
        except OSError as exc:
            if tree is not None:  # past the objects: the ref move itself failed
                raise GuardError("ledger_busy", f"cannot move {REF}: {exc}") from exc
            unwritten = exc  # a detached `git gc --auto` removed an object directory between
            continue  # libgit2's mkdir and its rename: write them again
        # we sealed the new line on a checked chain: the whole new ledger chains correctly
        lines = snap.lines + 1
        written = repo[tree]
        assert isinstance(written, Tree)
        ident = prefix_id(lines_tree(written, target), lines)
        answer = respond(entry)  # before the state below moves past the entry
        cache.GuardCache(repo).advance(target, snap.state, entry, ident, snap.generation)
        if lines % GC_EVERY == 0:  # each append leaves a few small loose objects, and reading
            objects.gc_auto(repo)  # tens of thousands of them costs far more than a pack
        return answer
    if unwritten is not None:
        raise GuardError("ledger_busy", f"cannot write the notes objects: {unwritten}")
    lock = Path(repo.path) / (REF + ".lock")
    if lock.exists():
        raise GuardError(
            "ledger_busy",
            f"{lock} exists: another writer holds it, or one was killed; "
            "run `strato guard unlock` (it checks the lock is stale and the ledger sound)",
        )
    raise GuardError("ledger_busy", f"{REF} kept moving; try again")

