"""Blast radii: the breadth-first walk settles each node at its first, nearest reach."""

from __future__ import annotations

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from tropo.check.graph import Edge, Graph

_id = st.sampled_from(list("abcdefgh"))
_edges = st.lists(st.tuples(_id, st.sampled_from(["ref", "owner", "related"]), _id), max_size=30)


def _reference(g: Graph, target: str, depth: int | None) -> dict[str, tuple[int, str]]:
    """Every inbound edge queued, the first pop of a node wins: slow and obviously right."""
    impacted: dict[str, tuple[int, str]] = {}
    queue = deque((e.src, 1, e.field) for e in g.inbound(target))
    while queue:
        nid, dist, via = queue.popleft()
        if nid == target or nid in impacted or (depth is not None and dist > depth):
            continue
        impacted[nid] = (dist, via)
        queue.extend((e.src, dist + 1, e.field) for e in g.inbound(nid))
    return impacted


@settings(max_examples=400)
@given(_edges, _id, st.one_of(st.none(), st.integers(0, 4)))
def test_blast_equals_the_exhaustive_walk(rows: list[tuple[str, str, str]], target: str,
                                          depth: int | None) -> None:
    g = Graph({}, [Edge(src, field, dst, False) for src, field, dst in rows])
    assert g.blast(target, depth) == _reference(g, target, depth)
    assert list(g.blast(target, depth)) == list(_reference(g, target, depth))  # same order


def test_edges_are_indexed_both_ways() -> None:
    g = Graph({}, [Edge("a", "ref", "b", False), Edge("c", "ref", "b", True)])
    assert [e.src for e in g.inbound("b")] == ["a", "c"] and g.outbound("a")[0].dst == "b"
    assert g.broken == 1 and g.inbound("zz") == []


@settings(max_examples=400)
@given(_edges, st.lists(_id, max_size=6), st.integers(0, 5))
def test_counts_per_component_and_nearest_equal_whole_walks(rows: list[tuple[str, str, str]],
                                                            targets: list[str], limit: int) -> None:
    g = Graph({}, [Edge(src, field, dst, False) for src, field, dst in rows])
    assert g.reach_counts(targets) == {t: len(g.blast(t)) for t in targets}
    for t in targets:
        whole = sorted(g.blast(t).items(), key=lambda kv: (kv[1][0], kv[0]))
        assert g.nearest(t, limit) == whole[:limit]


def test_counts_on_a_big_cycle_switch_to_components_and_stay_exact() -> None:
    ring = [Edge(f"n{i}", "ref", f"n{(i + 1) % 50}", False) for i in range(50)]
    tail = [Edge(f"t{i}", "ref", "n0", False) for i in range(5)] + [Edge("n7", "ref", "n7", False)]
    g = Graph({}, ring + tail)
    targets = [f"n{i}" for i in range(0, 50, 5)] + ["t1", "n7"]
    counts = g.reach_counts(targets)
    assert counts == {t: len(g.blast(t)) for t in targets}
    assert "_components" in g.__dict__  # the reaches added up: the per-component way ran
