"""The running-state record: what a ledger's first ``lines`` lines fold to, in one
canonical JSON line.

How many lines, the last line's digest, the state it leaves the resource in, and which
line holds the policy in force (with that policy's graph version and checksum). It is
the one format of a remembered fold: ``state/<anchor>`` in the notes tree holds it,
rewritten by every append in the same notes commit as the line, and the local cache
keeps it for the lines it names (:mod:`strato.guard.cache`, which resumes from either).

Whoever writes the notes chooses the notes copy's bytes, so nothing takes them on trust:

- a writer uses it only after checking it against the lines it names
  (:func:`strato.guard.cache.from_running`);
- ``verify`` and ``review`` fold every line anyway and compare (:func:`mismatch`): a
  record that is not exactly what its first ``lines`` lines fold to is a break. A record
  naming fewer lines than the ledger has, but true of them, is stale (an older writer
  appended without it), not a break.

Pure.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from strato.guard import ledger

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
