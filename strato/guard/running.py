"""A ledger's running state, kept beside its lines so a writer need not read them.

``state/<anchor>`` in the notes tree holds one canonical JSON line: how many lines the
ledger has, the last line's digest, the state it leaves the resource in, and which line
holds the policy in force (with that policy's graph version and checksum). Every append
the guard makes rewrites it in the same notes commit as the line, so a writer with no
local cache reads this blob, the last line and the policy line, never the whole ledger.

Whoever writes the notes chooses these bytes, so nothing takes them on trust:

- a writer (:func:`resume`) uses a record only after checking it against the lines it
  names: the ledger has exactly that many lines, the last one is sound and has that
  digest and leaves that state, is a legal step under the named policy (a policy change
  stays where it is), and the named line holds that policy at that graph version.
  Anything else is a miss: the whole ledger is read and folded, as without the record;
- ``verify`` and ``review`` fold every line anyway and compare (:func:`mismatch`): a
  record that is not exactly what its first ``lines`` lines fold to is a break. A record
  naming fewer lines than the ledger has, but true of them, is stale (an older writer
  appended without it), not a break.

Pure: lines are read through the callables the caller passes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import asdict, dataclass
from typing import Any

from strato.guard import derive, ledger
from strato.guard.errors import GuardError

STATE = "state"  # the notes tree's directory of running-state blobs, one per anchor
VERSION = 1
_KEYS = frozenset({"v", "lines", "head", "current_state", "graph_version", "policy_line", "checksum"})


@dataclass(frozen=True)
class Running:
    lines: int
    head: str  # entry_digest of the last line
    current_state: str
    graph_version: int
    policy_line: int  # the line (from 0) whose verdict holds the policy in force
    checksum: str  # that policy's checksum


def render(record: Running) -> bytes:
    """The blob's bytes: canonical, so a record has exactly one encoding."""
    body = {"v": VERSION, **asdict(record)}
    return (json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def parse(data: bytes) -> Running | None:
    """The record ``data`` encodes, or None unless it is exactly what :func:`render` writes."""
    try:
        obj = ledger.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict) or set(obj) != _KEYS or obj["v"] != VERSION:
        return None
    ints = (obj["lines"], obj["graph_version"], obj["policy_line"])
    strs = (obj["head"], obj["current_state"], obj["checksum"])
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints) or not all(
        isinstance(v, str) and v for v in strs
    ):
        return None
    found = Running(**{k: v for k, v in obj.items() if k != "v"})
    if not (0 <= found.policy_line < found.lines and found.graph_version >= 1):
        return None
    return found if render(found) == data else None


def of_state(state: ledger.State) -> Running:
    return Running(
        state.length,
        state.head,
        state.current_state,
        state.graph_version,
        state.policy_line,
        state.checksum,
    )


def after(before: Running | None, entry: dict[str, Any]) -> Running:
    """The record once ``entry`` (sealed, and checked legal by the writer) is appended
    to a ledger whose record was ``before`` (None: ``entry`` registers the ledger)."""
    line = 0 if before is None else before.lines
    verdict = entry["verdict"]
    if before is None or entry["kind"] == "graph_version":
        version = 1 if before is None else verdict["graph_version"]
        return Running(line + 1, entry["entry_digest"], entry["to_state"], version, line, verdict["checksum"])
    moved = entry["outcome"] in ledger.MOVES
    return Running(
        line + 1,
        entry["entry_digest"],
        entry["to_state"] if moved else before.current_state,
        before.graph_version,
        before.policy_line,
        before.checksum,
    )


def mismatch(data: bytes, entries: list[dict[str, Any]], final: ledger.State) -> str | None:
    """Why the record ``data`` is not true of the ledger ``entries``, which fold to
    ``final`` (None if it is)."""
    found = parse(data)
    if found is None:
        return f"the running-state blob under {STATE}/ is not one the guard writes"
    if found.lines > final.length:
        return f"the running-state blob claims {found.lines} lines; the ledger has {final.length}"
    at = final if found.lines == final.length else ledger.fold(entries[: found.lines], final.resource_id)
    want = of_state(at)
    wrong = [k for k, v in asdict(found).items() if asdict(want)[k] != v]
    if wrong:
        return (
            f"the running-state blob does not match the ledger's first {found.lines} lines "
            f"({', '.join(wrong)})"
        )
    return None


class Deferred(MutableMapping[str, dict[str, Any]]):
    """Idempotency keys a resumed state does not hold: the first use reads the ledger."""

    def __init__(self, load: Callable[[], MutableMapping[str, dict[str, Any]]]) -> None:
        self._load = functools.cache(load)

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._load()[key]

    def __setitem__(self, key: str, entry: dict[str, Any]) -> None:
        self._load()[key] = entry

    def __delitem__(self, key: str) -> None:
        raise TypeError("a ledger forgets no idempotency key")

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


def _entry(text: bytes) -> dict[str, Any]:
    """One ledger line, its own digest checked (its link to the line before is not)."""
    decoded = text.decode("utf-8")
    first = ledger.loads(decoded)
    prev = first.get("prev_digest") if isinstance(first, dict) else None
    (entry,) = ledger.parse(decoded, 0, prev if isinstance(prev, str) else "")
    return entry


def resume(
    data: bytes | None,
    resource_id: str,
    count: int,
    line: Callable[[int], bytes],
    keys: Callable[[], MutableMapping[str, dict[str, Any]]],
    entries: Callable[[], list[dict[str, Any]]],
) -> ledger.State | None:
    """The state after the ``count`` lines of a ledger (``line(i)`` reads line ``i``)
    from its record ``data``, if the record is consistent with the lines it names; None
    on any doubt. ``keys`` and ``entries`` read the whole ledger, only if asked for."""
    record = parse(data) if data is not None else None
    if record is None or record.lines != count:
        return None
    try:
        last = _entry(line(count - 1))
        at = last if record.policy_line == count - 1 else _entry(line(record.policy_line))
        first = at if record.policy_line == 0 else _entry(line(0))
        pol, version = ledger.policy_of(at, record.policy_line + 1)
        policy_kind = "register" if record.policy_line == 0 else "graph_version"
        moved = last["kind"] == "register" or last["outcome"] in ledger.MOVES
        if (
            at["kind"] != policy_kind
            or (last["kind"] in ("register", "graph_version")) != (record.policy_line == count - 1)
            or first["kind"] != "register"
            or first["verdict"].get("resource_id") != resource_id
            or (version, pol.checksum) != (record.graph_version, record.checksum)
            or last["entry_digest"] != record.head
            or (last["to_state"] if moved else last["from_state"]) != record.current_state
            or (last["kind"] == "graph_version" and last["to_state"] != last["from_state"])
        ):
            return None
        state = ledger.State(
            resource_id,
            pol,
            version,
            record.current_state,
            record.head,
            by_key=Deferred(keys),
            length=count,
            read_entries=entries,
            policy_line=record.policy_line,
        )
        if last["kind"] in ("transition", "deviation"):
            before = ledger.State(resource_id, pol, version, last["from_state"], last["prev_digest"])
            derive.check(last, before)  # a legal step under the policy the record names
    except (ledger.LedgerBreak, GuardError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return state
