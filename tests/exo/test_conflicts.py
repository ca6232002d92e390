from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from exo.conflicts import Conflict, active_ids, find_conflicts
from exo.items import WorkItem

ids = st.sampled_from([f"n{i}" for i in range(12)])


def _all_pairs(active: list[str], edges: list[tuple[str, str]]) -> list[Conflict]:
    """vivary-exo's definition, pair by pair: the reference the index must equal."""
    out: dict[str, set[str]] = {}
    for src, dst in edges:
        out.setdefault(src, set()).add(dst)
    found = []
    for i, a in enumerate(active):
        for b in active[i + 1 :]:
            shared = sorted(out.get(a, set()) & out.get(b, set()))
            if shared:
                found.append(Conflict(a, b, shared))
    return found


@given(st.sets(ids), st.lists(st.tuples(ids, ids), max_size=40))
def test_inverted_index_equals_all_pairs(active: set[str], edges: list[tuple[str, str]]) -> None:
    ordered = sorted(active)
    assert find_conflicts(ordered, edges) == _all_pairs(ordered, edges)


def test_only_active_items_count() -> None:
    items = [WorkItem("b", "changes/b.md", "active", None),
             WorkItem("a", "changes/a.md", "active", None),
             WorkItem("d", "changes/d.md", "planned", None)]
    active = active_ids(items)
    assert active == ["a", "b"]
    edges = [("a", "core"), ("b", "core"), ("d", "core"), ("b", "api"), ("a", "api")]
    assert find_conflicts(active, edges) == [Conflict("a", "b", ["api", "core"])]
