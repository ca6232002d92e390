"""Chain stores: JSON documents kept as a chain of commits under one ref, so the ref's
history is the record's history and it travels with push and fetch like any branch.

A commit's tree holds the documents and its message says what changed. A writer reads
the tip, decides what to write from what it read, commits on that tip and moves the
ref by compare-and-swap (:func:`tropo.git.repo.cas_ref`, held under
:func:`tropo.git.reflock.ref_writer` so a writer killed mid-update cannot block the ref
for ever). Two writers from the same tip never both land: the loser reads the winner's
tip and decides again, at most :data:`MAX_RACE_RETRIES` times, then gets
:class:`ChainConflict`. What to write stays with the callers (runs, lanes, claims'
release records, heartbeat branches); this module owns only how it is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tropo.git.objects import FileMap, blob_at, commit_tree, write_commit
from tropo.git.refs import RefRaceError, cas_ref, read_ref, ref_writer
from tropo.git.types import Oid, Repository

MAX_RACE_RETRIES = 50
T = TypeVar("T")
# documents are plain JSON read back from git, never cyclic: skipping the encoder's
# cycle bookkeeping gives the same bytes about 15% sooner (a run's state is encoded
# whole on every transition)
_COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False)


class ChainConflict(RefRaceError):
    """The chain kept moving: every one of :data:`MAX_RACE_RETRIES` writes lost its race."""


@dataclass(frozen=True)
class Append:
    """A new commit on the tip that was read: its files (top-level documents, as bytes or
    an existing blob's id) or a tree already written, its message, and its parents when
    not just that tip (a merge)."""

    files: FileMap
    message: str
    parents: Sequence[str] | None = None
    tree: Oid | None = None


# What one attempt decided from the tip it read: a new commit, an existing commit to
# move the ref to (a fast-forward), or None to leave the ref where it is.
Decision = Append | str | None


def encode(doc: Any, indent: int | None = None) -> bytes:
    """A document's bytes: keys sorted, so equal documents are equal blobs; compact
    unless an ``indent`` is asked for (a document people diff in review)."""
    if indent is None:
        return _COMPACT.encode(doc).encode()
    return json.dumps(doc, sort_keys=True, indent=indent).encode()


def read(repo: Repository, commit: str, name: str) -> Any:
    """The JSON document ``name`` in ``commit``'s tree (None when absent); ValueError
    (a JSON or Unicode decoding error) when its bytes are not JSON."""
    data = blob_at(repo, commit, name)
    return None if data is None else json.loads(data)


def move(repo: Repository, ref: str, new: str | Oid | None, expected: str | None, reason: str) -> None:
    """Point ``ref`` at ``new`` if it still points at ``expected`` (None: it must not exist
    yet), logging ``reason``; RefRaceError when another writer moved it first."""
    with ref_writer(repo, ref):
        cas_ref(repo, ref, new, expected, reason)


def append(repo: Repository, ref: str, expected: str | None, change: Append, reason: str) -> str:
    """Commit ``change`` on ``expected`` (the tip read; None starts the chain) and move
    ``ref`` there; the new commit. RefRaceError when the tip moved meanwhile."""
    parents = change.parents if change.parents is not None else [expected] if expected else []
    ids = [Oid(hex=p) for p in parents]
    if change.tree is not None:
        commit = commit_tree(repo, change.tree, ids, change.message)
    else:
        commit = write_commit(repo, change.files, ids, change.message)
    move(repo, ref, commit, expected, reason)
    return str(commit)


def update(
    repo: Repository, ref: str, decide: Callable[[str | None], tuple[Decision, T]], reason: str
) -> tuple[str | None, T]:
    """Read the tip, ``decide`` what to write on it, write it; on a lost race do it all
    again from the winner's tip. The tip after the write (the one read when nothing was
    written) and what the last ``decide`` returned beside its decision."""
    for _ in range(MAX_RACE_RETRIES):
        tip = read_ref(repo, ref)
        decision, value = decide(tip)
        try:
            if isinstance(decision, Append):
                return append(repo, ref, tip, decision, reason), value
            if decision is not None and decision != tip:
                move(repo, ref, decision, tip, reason)
                return decision, value
            return tip, value
        except RefRaceError:
            continue
    raise ChainConflict(ref, None, read_ref(repo, ref))
