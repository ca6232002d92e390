"""Conflicts: active work items whose outbound edges share a target.

Two in-flight changes that touch the same module, verification or gate would collide.
Pairs come from an inverted index (target -> active sources), so the cost follows the
number of actual overlaps instead of every pair of active items.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from exo.items import WorkItem

ACTIVE = "active"


@dataclass(frozen=True)
class Conflict:
    a: str
    b: str
    shared: list[str]


def active_ids(items: Iterable[WorkItem]) -> list[str]:
    return sorted({item.id for item in items if item.status == ACTIVE})


def find_conflicts(
    active: list[str], edges: Iterable[tuple[str, str]]
) -> list[Conflict]:
    """Every pair ``a < b`` of ``active`` ids sharing at least one edge target
    (broken targets count: two items naming the same missing node still collide)."""
    wanted = set(active)
    sources: dict[str, set[str]] = defaultdict(set)
    for src, dst in edges:
        if src in wanted:
            sources[dst].add(src)
    shared: dict[tuple[str, str], set[str]] = defaultdict(set)
    for target, srcs in sources.items():
        for pair in combinations(sorted(srcs), 2):
            shared[pair].add(target)
    return [Conflict(a, b, sorted(targets)) for (a, b), targets in sorted(shared.items())]


def as_json(active: list[str], conflicts: list[Conflict]) -> dict[str, object]:
    return {
        "active": active,
        "conflicts": [{"a": c.a, "b": c.b, "shared": c.shared} for c in conflicts],
    }


def as_text(active: list[str], conflicts: list[Conflict]) -> list[str]:
    if not conflicts:
        return [f"exo: no conflicts among {len(active)} active work item(s)"]
    lines = [f"exo: {len(conflicts)} conflict(s) among {len(active)} active work item(s):"]
    lines += [f"  {c.a} <-> {c.b}  share: {', '.join(c.shared)}" for c in conflicts]
    return lines
