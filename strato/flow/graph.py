"""The step graph of one flow: dependency edges (`after`, step-output references) and
routing edges (`on_fail`, gate `on_approve`/`on_kill`), inserted one at a time so the
edge that closes a cycle is the one reported."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

EdgeKind = Literal["dep", "route"]


@dataclass
class StepGraph:
    steps: list[str]
    succ: dict[str, dict[str, set[EdgeKind]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for step in self.steps:
            self.succ.setdefault(step, {})

    def add(self, src: str, dst: str, kind: EdgeKind) -> bool:
        """Insert an edge; False if it would close a cycle (then it is not inserted)."""
        if self.reaches(dst, src):
            return False
        self.succ[src].setdefault(dst, set()).add(kind)
        return True

    def successors(self, step: str, kinds: Iterable[EdgeKind] = ("dep", "route")) -> list[str]:
        wanted = set(kinds)
        return [dst for dst, ks in self.succ.get(step, {}).items() if ks & wanted]

    def closure(self, start: str, kinds: Iterable[EdgeKind] = ("dep", "route")) -> set[str]:
        """Every step reachable from `start` (including it) over the given edge kinds."""
        wanted = tuple(kinds)
        seen = {start}
        stack = [start]
        while stack:
            for nxt in self.successors(stack.pop(), wanted):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    def reaches(self, src: str, dst: str, kinds: Iterable[EdgeKind] = ("dep", "route")) -> bool:
        return dst in self.closure(src, kinds)

    def dependencies(self, step: str) -> list[str]:
        """Direct dependency predecessors of a step."""
        return [src for src, out in self.succ.items() if "dep" in out.get(step, set())]


def closing_edge(
    roots: Iterable[str], edges: Callable[[str], Iterable[tuple[str, str]]]
) -> tuple[str, str, str] | None:
    """`(source, target, label)` of the first edge that closes a cycle in a depth-first
    walk visiting `roots` in order and each node's `(target, label)` edges in order;
    None if there is no cycle.

    This is how Stratum places recursion errors: at the reference that closes the cycle,
    not at the first reference that is part of one. Iterative, so a long chain of
    references cannot exhaust the interpreter's stack."""
    done: set[str] = set()
    for root in roots:
        if root in done:
            continue
        active = {root}
        stack: list[tuple[str, Iterator[tuple[str, str]]]] = [(root, iter(edges(root)))]
        while stack:
            node, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                stack.pop()
                active.discard(node)
                done.add(node)
                continue
            target, label = step
            if target in active:
                return node, target, label
            if target not in done:
                active.add(target)
                stack.append((target, iter(edges(target))))
    return None
