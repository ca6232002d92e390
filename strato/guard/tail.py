"""Resuming a ledger's state from the cache, so an append costs the same at any length.

A writer needs the state a ledger folds to (policy, current state, head digest, graph
version) and its idempotency keys, not its entries. After a full fold, and after every
append we make, ``.git/vivary/guard/cache.v1/tails/<anchor>.json`` records that state
with the :func:`strato.guard.store.prefix_id` of the lines it folds; each idempotency
key's first entry is a file under ``keys/<anchor>/<generation>/``. A later load whose
ledger starts with exactly those lines (the prefix id says so, without reading them)
resumes from the record, checks and applies only the lines appended since, and reads a
key's entry only when a request names it. Anything else (another history, a missing or
odd record) is a miss: the full fold runs and writes a new generation.

Like the rest of the cache it is as trusted as ``.git`` and guards against staleness, not
forgery; ``verify`` never uses it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from strato.guard import cache, ledger
from strato.guard import policy as policy_mod
from strato.guard.errors import GuardError
from tropo.fs.atomic import write_atomic


@dataclass(frozen=True)
class Tail:
    ident: str  # prefix id of the ``lines`` lines this state folds
    lines: int
    head: str
    current_state: str
    graph_version: int
    policy_line: int
    generation: str  # directory of this history's key index


def _root(verified: cache.GuardCache) -> Path:
    return verified.root


def read(verified: cache.GuardCache, anchor: str) -> Tail | None:
    try:
        obj = json.loads((_root(verified) / "tails" / f"{anchor}.json").read_bytes())
        found = Tail(**obj)
    except (OSError, ValueError, TypeError, RecursionError):
        return None
    fields = (found.ident, found.head, found.current_state, found.generation)
    if not all(isinstance(v, str) and v for v in fields) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for v in (found.lines, found.graph_version, found.policy_line)
    ):
        return None
    return found


def save(verified: cache.GuardCache, anchor: str, record: Tail) -> None:
    with contextlib.suppress(OSError):  # a cache that cannot be written is a miss later
        data = json.dumps(asdict(record), sort_keys=True).encode()
        write_atomic(_root(verified) / "tails" / f"{anchor}.json", data, fsync=False)


def of(state: ledger.State, ident: str, generation: str) -> Tail:
    return Tail(
        ident,
        state.length,
        state.head,
        state.current_state,
        state.graph_version,
        state.policy_line,
        generation,
    )


class Keys(MutableMapping[str, dict[str, Any]]):
    """The first entry of each idempotency key, one cache file per key, read on demand."""

    def __init__(self, verified: cache.GuardCache, anchor: str, generation: str) -> None:
        self.dir = _root(verified) / "keys" / anchor / generation

    def _path(self, key: str) -> Path:
        return self.dir / hashlib.sha256(key.encode("utf-8")).hexdigest()

    def __getitem__(self, key: str) -> dict[str, Any]:
        try:
            entry = json.loads(self._path(key).read_bytes())
        except (OSError, ValueError, RecursionError):
            raise KeyError(key) from None
        if not isinstance(entry, dict) or entry.get("idempotency_key") != key:
            raise KeyError(key)
        return entry

    def __setitem__(self, key: str, entry: dict[str, Any]) -> None:
        """Only ever called for an entry already in git (a committed line). Raises
        OSError: a key that could not be recorded must not look absent later."""
        write_atomic(self._path(key), json.dumps(entry, sort_keys=True).encode(), fsync=False)

    def __delitem__(self, key: str) -> None:
        raise TypeError("a ledger forgets no idempotency key")

    def __iter__(self) -> Iterator[str]:
        raise TypeError("the key index is looked up, not listed")

    def __len__(self) -> int:
        raise TypeError("the key index is looked up, not listed")


def forget(verified: cache.GuardCache, anchor: str) -> None:
    """Drop the record, so the next load folds the whole ledger again."""
    with contextlib.suppress(OSError):
        (_root(verified) / "tails" / f"{anchor}.json").unlink(missing_ok=True)


def remember(verified: cache.GuardCache, anchor: str, state: ledger.State, ident: str) -> str:
    """Record a fully folded state as a new generation; returns it ("" if not recorded)."""
    forget(verified, anchor)
    keys_root = _root(verified) / "keys" / anchor
    with contextlib.suppress(OSError):
        for old in keys_root.iterdir():
            shutil.rmtree(old, ignore_errors=True)
    index = Keys(verified, anchor, ident)
    try:
        for key, entry in state.by_key.items():
            index[key] = entry
    except OSError:
        return ""
    save(verified, anchor, of(state, ident, ident))
    return ident


def advance(
    verified: cache.GuardCache,
    anchor: str,
    state: ledger.State,
    entry: dict[str, Any],
    ident: str,
    generation: str,
) -> None:
    """Move the record past ``entry``, which we just appended (``ident`` names the lines
    with it)."""
    key = entry["idempotency_key"]
    fresh = key is not None and key not in state.by_key
    try:
        state.apply(entry, state.length + 1)
        if fresh and not isinstance(state.by_key, Keys):
            Keys(verified, anchor, generation)[key] = entry
    except (OSError, ledger.LedgerBreak):
        forget(verified, anchor)
        return
    save(verified, anchor, of(state, ident, generation))


def resume(
    verified: cache.GuardCache,
    anchor: str,
    resource_id: str,
    prefix: Callable[[int], str],
    count: int,
    line: Callable[[int], bytes],
    read_entries: Callable[[], list[dict[str, Any]]],
) -> tuple[ledger.State, str] | None:
    """The state after ``count`` lines, from the record if the ledger extends what it
    folded (``prefix(n)`` names the first ``n`` lines, ``line(i)`` reads line ``i``);
    None on any miss. Returns the state and its generation."""
    record = read(verified, anchor)
    if record is None or count < record.lines or prefix(record.lines) != record.ident:
        return None
    try:
        policy_entry = json.loads(line(record.policy_line))
        pol = policy_mod.parse(policy_entry["verdict"]["policy"])
    except (ValueError, KeyError, TypeError, RecursionError, GuardError):
        return None
    state = ledger.State(
        resource_id,
        pol,
        record.graph_version,
        record.current_state,
        record.head,
        by_key=Keys(verified, anchor, record.generation),
        length=record.lines,
        read_entries=read_entries,
        policy_line=record.policy_line,
    )
    if count > record.lines:
        text = b"".join(line(i) for i in range(record.lines, count))
        try:
            for n, entry in enumerate(ledger.parse(text.decode("utf-8"), 0, record.head)):
                state.apply(entry, record.lines + n + 1)
        except (ledger.LedgerBreak, UnicodeDecodeError, OSError):
            forget(verified, anchor)
            return None  # the full fold says where and why
        save(verified, anchor, of(state, prefix(count), record.generation))
    return state, record.generation
