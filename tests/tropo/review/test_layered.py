"""The layered layout: acyclic after reversing back edges, every edge pointing to a later
layer, crossings counted exactly and never made worse by the ordering sweeps."""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from tropo.check.graph import Edge, Graph, Node
from tropo.review.layered import back_edges, crossings, longest_path_layers, order
from tropo.review.view import page_data


@st.composite
def graphs(draw: st.DrawFn, most: int = 30) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(1, most))
    node = st.integers(0, n - 1)
    return n, draw(st.lists(st.tuples(node, node), max_size=3 * n))


def _acyclic(n: int, edges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    flipped = back_edges(n, edges)
    return [(d, s) if i in flipped else (s, d) for i, (s, d) in enumerate(edges)]


def _brute_crossings(position: list[int], layer: list[int], edges: list[tuple[int, int]]) -> int:
    spans = []
    for s, d in edges:
        top, bottom = (s, d) if layer[s] < layer[d] else (d, s)
        if layer[bottom] - layer[top] == 1:
            spans.append((layer[top], position[top], position[bottom]))
    return sum(1 for (la, a1, a2), (lb, b1, b2) in combinations(spans, 2)
               if la == lb and (a1 - b1) * (a2 - b2) < 0)


@given(graphs())
def test_reversing_back_edges_leaves_every_edge_pointing_forward(g: tuple[int, list[tuple[int, int]]]) -> None:
    n, edges = g
    forward = _acyclic(n, edges)
    layer = longest_path_layers(n, forward)
    assert all(layer[d] > layer[s] for s, d in forward if s != d)
    # Longest path: a node not in layer 0 has an edge from the layer just before it.
    for v in range(n):
        if layer[v]:
            assert any(d == v and layer[s] == layer[v] - 1 for s, d in forward)


@given(graphs(12), st.randoms(use_true_random=False))
def test_crossings_counts_every_crossing_pair(g: tuple[int, list[tuple[int, int]]], rng: object) -> None:
    n, edges = g
    layer = longest_path_layers(n, _acyclic(n, edges))
    position = list(range(n))
    rng.shuffle(position)  # type: ignore[attr-defined]
    assert crossings(position, layer, edges) == _brute_crossings(position, layer, edges)


@settings(max_examples=60)
@given(graphs())
def test_ordering_keeps_every_node_in_its_layer_and_never_adds_crossings(
        g: tuple[int, list[tuple[int, int]]]) -> None:
    n, edges = g
    layer = longest_path_layers(n, _acyclic(n, edges))
    rows = order(layer, edges)
    assert sorted(v for row in rows for v in row) == list(range(n))
    assert all(layer[v] == k for k, row in enumerate(rows) for v in row)
    position = [0] * n
    for row in rows:
        for i, v in enumerate(row):
            position[v] = i
    start = [0] * n
    seen: dict[int, int] = {}
    for v in range(n):  # the order the sweeps start from: index order within each layer
        start[v] = seen.get(layer[v], 0)
        seen[layer[v]] = start[v] + 1
    assert crossings(position, layer, edges) <= crossings(start, layer, edges)
    assert order(layer, edges) == rows  # deterministic


def test_a_crossing_that_reordering_removes_is_removed() -> None:
    # a -> d and b -> c cross when both layers are in index order; swapping removes it.
    edges = [(0, 3), (1, 2)]
    layer = [0, 0, 1, 1]
    assert crossings([0, 1, 0, 1], layer, edges) == 1
    rows = order(layer, edges)
    position = {v: i for row in rows for i, v in enumerate(row)}
    assert crossings([position[v] for v in range(4)], layer, edges) == 0


def _graph(refs: dict[str, list[str]], broken: dict[str, list[str]] | None = None) -> Graph:
    nodes = {nid: Node(nid, "note", f"notes/{nid}.md", nid, {}) for nid in refs}
    edges = [Edge(src, "refs", dst, False) for src, dsts in refs.items() for dst in dsts]
    edges += [Edge(src, "refs", dst, True) for src, dsts in (broken or {}).items() for dst in dsts]
    return Graph(nodes, edges)


def test_page_points_refs_right_and_puts_unlinked_nodes_last() -> None:
    g = _graph({"a": ["b", "c"], "b": ["c"], "c": ["a"], "lonely": [], "d": ["c"]},
               broken={"d": ["gone"]})
    data = page_data("graph", g)
    at = {n["id"]: (n["x"], n["y"]) for n in data["nodes"]}
    assert len(set(at.values())) == len(at), "no two nodes share a cell"
    forward = [(data["nodes"][s]["id"], data["nodes"][d]["id"]) for s, _, d, _ in data["edges"]]
    pointing_right = [at[d][0] > at[s][0] for s, d in forward]
    assert pointing_right.count(False) == 1  # the one edge closing the cycle a -> b -> c -> a
    assert at["lonely"][0] > max(x for nid, (x, _) in at.items() if nid != "lonely")
    assert data["headers"][-1]["label"] == "no refs (1)"
    ghost = next(n for n in data["nodes"] if n.get("ghost"))
    assert ghost["id"] == "gone" and ghost["x"] > at["d"][0]


def test_blast_reads_right_to_left_from_its_target() -> None:
    g = _graph({"t": [], "a": ["t"], "b": ["a"], "c": ["a", "t"]})
    ranks = {"t": 0, "a": 1, "c": 1, "b": 2}
    data = page_data("blast", g, set(ranks), ranks)
    x = {n["id"]: n["x"] for n in data["nodes"]}
    assert x["b"] < x["a"] == x["c"] < x["t"]
    assert [h["label"] for h in data["headers"]] == ["distance 2 (1)", "distance 1 (2)", "target (1)"]
