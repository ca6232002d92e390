"""A guard's policy: its graph, edge predicates, terminal states and stakes.

Pure: validation, the checksum, and the additive-only rule that lets ``upgrade`` run
without a signature.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strato.guard.canonical import canonical, policy_canonical, policy_checksum
from strato.guard.errors import GuardError

STATE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
RESERVED = frozenset({"__proto__", "constructor", "prototype"})
STAKES = ("cheap", "default", "paranoid")
TRUSTED_TYPES = frozenset({"deterministic"})
LLM_TYPES = frozenset({"verified", "judged"})
MAX_RESOURCE_ID = 512


def check_resource_id(resource_id: object) -> str:
    """Refuse ids that could not be a single opaque name."""
    if not isinstance(resource_id, str) or not resource_id:
        raise GuardError("invalid_resource_id", "resource_id must be a non-empty string")
    if len(resource_id) > MAX_RESOURCE_ID:
        raise GuardError(
            "invalid_resource_id",
            f"resource_id is {len(resource_id)} characters; the limit is {MAX_RESOURCE_ID}",
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in resource_id):
        raise GuardError(
            "invalid_resource_id", "resource_id may not contain NUL or control characters"
        )
    if resource_id in {".", ".."} or ".." in resource_id.replace("\\", "/").split("/"):
        raise GuardError("invalid_resource_id", "resource_id may not be or contain a '..' segment")
    return resource_id


def check_state(name: object) -> str:
    if not isinstance(name, str) or not STATE_NAME.match(name) or name in RESERVED:
        raise GuardError(
            "invalid_state_name", f"state name {name!r} must match {STATE_NAME.pattern}"
        )
    return name


def edge_key(src: str, dst: str) -> str:
    return f"{src}->{dst}"


def _str_list(value: object, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise GuardError("invalid_policy", f"{what} must be a list of strings")
    return list(value)


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise GuardError("invalid_policy", f"{what} must be an object")
    return value


@dataclass(frozen=True)
class Predicate:
    id: str
    type: str
    statement: str

    @property
    def trusted(self) -> bool:
        return self.type in TRUSTED_TYPES


@dataclass(frozen=True)
class Policy:
    graph: dict[str, list[str]]
    edge_predicates: dict[str, list[dict[str, Any]]]
    initial: str
    terminal: list[str]
    stakes: dict[str, str]

    @property
    def checksum(self) -> str:
        return policy_checksum(self.graph, self.edge_predicates, self.terminal, self.stakes)

    @property
    def canonical_bytes(self) -> bytes:
        """The bytes the checksum is the sha256 of: what a person approves."""
        text = policy_canonical(self.graph, self.edge_predicates, self.terminal, self.stakes)
        return text.encode("utf-8")

    def to_json(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "edge_predicates": self.edge_predicates,
            "initial": self.initial,
            "terminal": self.terminal,
            "stakes": self.stakes,
        }

    @property
    def nodes(self) -> set[str]:
        found = set(self.graph) | set(self.terminal)
        for targets in self.graph.values():
            found.update(targets)
        return found

    @property
    def edges(self) -> set[str]:
        return {edge_key(s, d) for s, targets in self.graph.items() for d in targets}

    def has_edge(self, src: str, dst: str) -> bool:
        return dst in self.graph.get(src, [])

    def predicates(self, src: str, dst: str) -> list[Predicate]:
        return [
            Predicate(
                str(p.get("id", "")), str(p.get("type") or "deterministic"), str(p["statement"])
            )
            for p in self.edge_predicates.get(edge_key(src, dst), [])
        ]

    def stake(self, src: str, dst: str) -> str:
        return self.stakes.get(edge_key(src, dst), "default")


def parse(raw: Mapping[str, Any]) -> Policy:
    """A policy from request fields, checked for shape and names (not for evidence)."""
    graph_raw = _mapping(raw.get("graph"), "graph")
    graph = {
        check_state(k): [check_state(t) for t in _str_list(v, f"graph[{k!r}]")]
        for k, v in graph_raw.items()
    }
    terminal = [check_state(t) for t in _str_list(raw.get("terminal", []), "terminal")]
    if len(set(terminal)) != len(terminal):
        raise GuardError("invalid_policy", "terminal has duplicate states")
    preds: dict[str, list[dict[str, Any]]] = {}
    for key, items in _mapping(raw.get("edge_predicates", {}), "edge_predicates").items():
        _check_edge_key(key)
        if not isinstance(items, list) or not all(isinstance(p, dict) for p in items):
            raise GuardError(
                "invalid_policy", f"edge_predicates[{key!r}] must be a list of objects"
            )
        for p in items:
            if not isinstance(p.get("statement"), str):
                raise GuardError("evidence_parse_error", f"predicate on {key} has no statement")
            kind = p.get("type") or "deterministic"
            if kind not in TRUSTED_TYPES | LLM_TYPES:
                raise GuardError(
                    "evidence_parse_error", f"predicate type {kind!r} on {key} is unknown"
                )
        preds[key] = items
    stakes: dict[str, str] = {}
    for key, value in _mapping(raw.get("stakes", {}), "stakes").items():
        _check_edge_key(key)
        if value not in STAKES:
            raise GuardError(
                "invalid_policy", f"stakes[{key!r}] must be one of {', '.join(STAKES)}"
            )
        stakes[key] = value
    initial = check_state(raw.get("initial"))
    if initial not in graph and initial not in terminal:
        raise GuardError("invalid_policy", f"initial state {initial!r} is not in the graph")
    policy = Policy(graph, preds, initial, terminal, stakes)
    for key, stake in stakes.items():
        src, dst = key.split("->")
        if stake == "paranoid" and not any(p.trusted for p in policy.predicates(src, dst)):
            raise GuardError(
                "paranoid_edge_needs_trusted_evidence",
                f"edge {key} is paranoid but has no deterministic predicate",
            )
    return policy


def _check_edge_key(key: str) -> None:
    parts = key.split("->")
    if len(parts) != 2:
        raise GuardError("invalid_policy", f"edge key {key!r} must look like 'from->to'")
    for part in parts:
        check_state(part)


def additive_violation(old: Policy, new: Policy) -> str | None:
    """Why ``new`` is not a pure extension of ``old`` (None when it is)."""
    if sorted(old.terminal) != sorted(new.terminal):
        return "the terminal set is frozen"
    if old.initial != new.initial:
        return "the initial state may not change"
    old_nodes = old.nodes
    if missing := old_nodes - new.nodes:
        return f"states removed: {', '.join(sorted(missing))}"
    if missing := old.edges - new.edges:
        return f"edges removed: {', '.join(sorted(missing))}"
    for key in old.edges | set(old.edge_predicates) | set(old.stakes):
        for field, before, after in (
            ("predicates", old.edge_predicates, new.edge_predicates),
            ("stakes", old.stakes, new.stakes),
        ):
            if (key in before) != (key in after) or canonical(before.get(key)) != canonical(
                after.get(key)
            ):
                return f"{field} of existing edge {key} changed"
    for key in sorted(new.edges - old.edges):
        src, dst = key.split("->")
        if dst in old_nodes:
            return f"new edge {key} must end at a new state"
        if src in old.terminal:
            return f"new edge {key} leaves terminal state {src}"
    return None
