"""A resource's ledger: hash-chained JSON lines, folded into the resource's state.

Pure. The first line registers the policy; every later line is a transition attempt,
a signed deviation or a policy change. :func:`parse` checks the chain,
:func:`State.apply` checks that each line is a legal step from the state before it, so
an edited, dropped, reordered or invented line is found with its line number.
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from strato.guard import policy as policy_mod
from strato.guard.canonical import entry_digest, raw_entry_digest
from strato.guard.errors import GuardError
from tropo.canonical import DuplicateKeyError, unique_keys

ENTRY_KEYS = frozenset(
    {
        "ts_ms",
        "from_state",
        "to_state",
        "outcome",
        "kind",
        "resolved_by",
        "idempotency_key",
        "payload_digest",
        "rationale",
        "verdict",
        "prev_digest",
        "entry_digest",
    }
)
# Ours adds where the entry was made; it sorts after entry_digest, so each line still
# starts with {"entry_digest":" as Stratum's lines do.
OPTIONAL_KEYS = frozenset({"git_head"})
MOVES = frozenset({"applied", "deviation"})
_STR, _OPT = (str,), (str, type(None))
_TYPES: dict[str, tuple[type, ...]] = {
    "ts_ms": (int,),
    "from_state": _OPT,
    "to_state": _STR,
    "outcome": _STR,
    "kind": _STR,
    "resolved_by": _STR,
    "idempotency_key": _OPT,
    "payload_digest": _STR,
    "rationale": _OPT,
    "verdict": (dict, type(None)),
    "prev_digest": _STR,
    "entry_digest": _STR,
    "git_head": _OPT,
}


# one decoder for every line: json.loads would build a decoder per call for the hook
_DECODER = json.JSONDecoder(object_pairs_hook=unique_keys)


def loads(line: str) -> Any:
    """One line as JSON; ValueError (no JSON, a duplicate key, a number Python will not
    read, nesting too deep) for anything a ledger line may not be."""
    try:
        return _DECODER.decode(line)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


class LedgerBreak(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message

    def as_guard_error(self, resource_id: str) -> GuardError:
        return GuardError("ledger_corrupt", f"ledger of {resource_id!r} is broken at {self}")


def parse(text: str, known: int = 0, after: str = "") -> list[dict[str, Any]]:
    """Entries of a ledger note, each digest and link checked.

    The first ``known`` lines were checked before (the same bytes, per the cache), so
    they are only decoded; every later line is checked and must link to them. ``after``
    is the digest of the line before ``text`` when ``text`` is a ledger's tail.
    """
    if text and not text.endswith("\n"):
        raise LedgerBreak(text.count("\n") + 1, "last line is not terminated")
    lines = text.splitlines()
    entries = _decode_known(lines[:known]) if known else []
    prev = entries[-1]["entry_digest"] if entries else after
    for n, line in enumerate(lines[len(entries) :], len(entries) + 1):
        try:
            entry = loads(line)
        except ValueError as exc:
            why = "duplicate key" if isinstance(exc, DuplicateKeyError) else "not JSON"
            raise LedgerBreak(n, why) from exc
        if (
            not isinstance(entry, dict)
            or not ENTRY_KEYS <= set(entry) <= ENTRY_KEYS | OPTIONAL_KEYS
        ):
            raise LedgerBreak(n, "not a ledger entry (wrong keys)")
        for key, value in entry.items():
            if not isinstance(value, _TYPES[key]) or (key == "ts_ms" and isinstance(value, bool)):
                raise LedgerBreak(n, f"{key} has the wrong type")
        if entry["prev_digest"] != prev:
            raise LedgerBreak(
                n, "prev_digest does not link to the line before (dropped or reordered)"
            )
        stated = entry["entry_digest"]
        # the raw digest (a hash over the line's bytes) is the cheap one, and for every
        # line either engine wrote it is the one that matches; re-serialising is the fallback
        if stated != raw_entry_digest(line, prev) and stated != entry_digest(entry, prev):
            raise LedgerBreak(n, "entry_digest does not match the entry (edited)")
        entries.append(entry)
        prev = stated
    return entries


def _decode_known(lines: list[str]) -> list[dict[str, Any]]:
    """Lines already checked, decoded in one pass; anything odd means check them again."""
    try:
        found = json.loads("[" + ",".join(lines) + "]")
    except (ValueError, RecursionError):
        return []
    if len(found) != len(lines) or not all(
        isinstance(e, dict) and isinstance(e.get("entry_digest"), str) for e in found
    ):
        return []
    return list(found)


def first_entry(text: str) -> dict[str, Any] | None:
    """The first line as JSON, unchecked: only to learn which resource a note claims."""
    try:
        first = loads(text.split("\n", 1)[0])
    except ValueError:
        return None
    return first if isinstance(first, dict) else None


def resource_of(data: bytes) -> str | None:
    """The id a ledger's first line registers, read without trusting anything else: only
    to name the ledger (a break, the anchor check), never to decide what it allows."""
    first = first_entry(data.decode("utf-8", "replace"))
    verdict = first.get("verdict") if first else None
    rid = verdict.get("resource_id") if isinstance(verdict, dict) else None
    return rid if isinstance(rid, str) else None


@dataclass
class State:
    """A resource as its ledger so far says it is.

    A state resumed from the cache (:mod:`strato.guard.cache`) knows its length, its
    idempotency keys (``by_key``, looked up on demand) and how to read its entries; it
    reads them only when ``entries`` is asked for."""

    resource_id: str
    policy: policy_mod.Policy
    graph_version: int
    current_state: str
    head: str
    known: list[dict[str, Any]] = field(default_factory=list)
    by_key: MutableMapping[str, dict[str, Any]] = field(default_factory=dict)
    length: int = 0
    read_entries: Callable[[], list[dict[str, Any]]] | None = None
    policy_line: int = 0  # the entry (from 0) whose verdict holds ``policy``

    @property
    def checksum(self) -> str:
        return self.policy.checksum

    @property
    def entries(self) -> list[dict[str, Any]]:
        if self.read_entries is not None:
            self.known, self.read_entries = self.read_entries(), None
        return self.known

    def apply(self, entry: dict[str, Any], line: int) -> None:
        """Advance by one entry, refusing any that is not a legal step from here."""
        kind, outcome = entry["kind"], entry["outcome"]
        src, dst = entry["from_state"], entry["to_state"]
        if kind in ("transition", "deviation"):
            if (kind, outcome) not in {
                ("transition", "applied"),
                ("transition", "refused"),
                ("deviation", "deviation"),
            }:
                raise LedgerBreak(line, f"outcome {outcome!r} does not fit kind {kind!r}")
            if src != self.current_state:
                raise LedgerBreak(
                    line, f"starts at {src!r} but the resource was at {self.current_state!r}"
                )
            if not self.policy.has_edge(src, dst):
                raise LedgerBreak(line, f"edge {src}->{dst} is not in the policy")
            if outcome in MOVES:
                self.current_state = dst
        elif kind == "graph_version" and outcome == "graph_version":
            if src != self.current_state or dst != self.current_state:
                raise LedgerBreak(line, "a policy change must stay at the current state")
            new, version = policy_of(entry, line)
            if version != self.graph_version + 1:
                raise LedgerBreak(
                    line, f"graph_version {version} does not follow {self.graph_version}"
                )
            if self.current_state not in new.nodes:
                raise LedgerBreak(line, "the new policy drops the current state")
            if entry["resolved_by"] == "agent" and (
                why := policy_mod.additive_violation(self.policy, new)
            ):
                raise LedgerBreak(line, f"unsigned policy change is not additive: {why}")
            self.policy, self.graph_version, self.policy_line = new, version, self.length
        else:
            raise LedgerBreak(line, f"unknown entry kind {kind!r}/{outcome!r}")
        key = entry["idempotency_key"]
        if key is not None and key not in self.by_key:
            self.by_key[key] = entry
        if self.read_entries is None:
            self.known.append(entry)
        self.length += 1
        self.head = entry["entry_digest"]


def policy_of(entry: dict[str, Any], line: int) -> tuple[policy_mod.Policy, int]:
    verdict = entry["verdict"]
    if not isinstance(verdict, dict) or not isinstance(verdict.get("policy"), dict):
        raise LedgerBreak(line, "policy entry carries no policy")
    try:
        pol = policy_mod.parse(verdict["policy"])
    except GuardError as exc:
        raise LedgerBreak(line, f"policy is invalid: {exc.message}") from exc
    if entry["payload_digest"] != pol.checksum or verdict.get("checksum") != pol.checksum:
        raise LedgerBreak(line, "policy checksum does not match the policy (tampered)")
    version = verdict.get("graph_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise LedgerBreak(line, "graph_version missing")
    return pol, version


Hook = Callable[[int, dict[str, Any], "State"], None]


def fold(entries: list[dict[str, Any]], resource_id: str, before_each: Hook | None = None) -> State:
    """The state after every entry; the first must register ``resource_id``.

    ``before_each(line, entry, state)`` sees each later entry with the state it applies
    to (the verifier checks signatures there) and may raise :class:`LedgerBreak`.
    """
    if not entries:
        raise LedgerBreak(1, "empty ledger")
    first = entries[0]
    if first["kind"] != "register" or first["outcome"] != "registered":
        raise LedgerBreak(1, "the first entry must register the resource")
    pol, version = policy_of(first, 1)
    if first["verdict"].get("resource_id") != resource_id:
        raise LedgerBreak(1, "ledger registers another resource (moved note)")
    if version != 1 or first["to_state"] != pol.initial:
        raise LedgerBreak(1, "register entry must start at the initial state, graph_version 1")
    state = State(resource_id, pol, 1, pol.initial, first["entry_digest"], [first], length=1)
    return fold_on(state, entries[1:], before_each)


def fold_on(state: State, entries: list[dict[str, Any]], before_each: Hook | None = None) -> State:
    """``state`` advanced by ``entries``, the lines after its ``length`` (see :func:`fold`)."""
    for n, entry in enumerate(entries, state.length + 1):
        if before_each is not None:
            before_each(n, entry, state)
        state.apply(entry, n)
    return state


def load(text: str, resource_id: str) -> State:
    return fold(parse(text), resource_id)
