"""A layered drawing of a directed graph: every edge points the same way, and the order
inside each layer is chosen to cross as few edges as it can. Pure and deterministic.

The layout is computed once, when ``tropo view`` writes its page, rather than by a
layout library in the browser: a page of a 20k-node graph must open at once, and a
layout computed here can be tested like any other function. The method is the classic
one (Sugiyama et al.): reverse the back edges of a depth-first walk so the graph is
acyclic, give each node the length of the longest path into it, then reorder each
layer by the barycentre of its neighbours, sweeping both ways and keeping the order
with the fewest crossings between adjacent layers.
"""

from __future__ import annotations

from collections.abc import Sequence

SWEEPS = 4  # at most this many down-and-up passes


def back_edges(n: int, edges: Sequence[tuple[int, int]]) -> set[int]:
    """Indices of the edges a depth-first walk (nodes in index order) meets as going
    back to a node still on its path: reversing exactly these leaves no cycle."""
    outs: list[list[int]] = [[] for _ in range(n)]
    for i, (src, _) in enumerate(edges):
        outs[src].append(i)
    state = [0] * n  # 0 unseen, 1 on the current path, 2 done
    back: set[int] = set()
    for root in range(n):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, 0)]
        while stack:
            node, at = stack[-1]
            if at == len(outs[node]):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, at + 1)
            i = outs[node][at]
            dst = edges[i][1]
            if state[dst] == 1:
                back.add(i)
            elif state[dst] == 0:
                state[dst] = 1
                stack.append((dst, 0))
    return back


def longest_path_layers(n: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """Each node's layer: 0 for a node no edge enters, else one more than the deepest
    node with an edge into it. ``edges`` must be acyclic (self-loops are ignored)."""
    outs: list[list[int]] = [[] for _ in range(n)]
    into = [0] * n
    for src, dst in edges:
        if src != dst:
            outs[src].append(dst)
            into[dst] += 1
    layer = [0] * n
    ready = [v for v in range(n) if into[v] == 0]
    while ready:
        node = ready.pop()
        for dst in outs[node]:
            layer[dst] = max(layer[dst], layer[node] + 1)
            into[dst] -= 1
            if into[dst] == 0:
                ready.append(dst)
    return layer


def _inversions(values: list[int]) -> int:
    """How many pairs appear out of order (a merge sort that counts)."""
    if len(values) < 2:
        return 0
    count = 0
    width = 1
    items = list(values)
    while width < len(items):
        merged: list[int] = []
        for lo in range(0, len(items), 2 * width):
            left, right = items[lo:lo + width], items[lo + width:lo + 2 * width]
            i = j = 0
            while i < len(left) and j < len(right):
                if right[j] < left[i]:
                    count += len(left) - i
                    merged.append(right[j])
                    j += 1
                else:
                    merged.append(left[i])
                    i += 1
            merged += left[i:] + right[j:]
        items = merged
        width *= 2
    return count


def crossings(position: Sequence[int], layer: Sequence[int],
              edges: Sequence[tuple[int, int]]) -> int:
    """Edge crossings between adjacent layers, for edges that join adjacent layers."""
    by_gap: dict[int, list[tuple[int, int]]] = {}
    for src, dst in edges:
        top, bottom = (src, dst) if layer[src] < layer[dst] else (dst, src)
        if layer[bottom] - layer[top] == 1:
            by_gap.setdefault(layer[top], []).append((position[top], position[bottom]))
    return sum(_inversions([b for _, b in sorted(pairs)]) for pairs in by_gap.values())


def order(layer: Sequence[int], edges: Sequence[tuple[int, int]]) -> list[list[int]]:
    """The nodes of each layer, top to bottom. Nodes start in index order (so callers
    sort them first, e.g. by type and id); barycentre sweeps then move each node
    towards its neighbours in the layers already placed, until a sweep no longer
    reduces the crossings; the order with the fewest is kept."""
    depth = max(layer, default=-1) + 1
    rows: list[list[int]] = [[] for _ in range(depth)]
    for node, at in enumerate(layer):
        rows[at].append(node)
    above: list[list[int]] = [[] for _ in layer]  # neighbours in earlier layers
    below: list[list[int]] = [[] for _ in layer]
    for src, dst in edges:
        if layer[src] < layer[dst]:
            above[dst].append(src)
            below[src].append(dst)
        elif layer[dst] < layer[src]:
            above[src].append(dst)
            below[dst].append(src)
    where = [0.0] * len(layer)  # position within the layer, scaled to [0, 1]

    def place(row: list[int]) -> None:
        for i, node in enumerate(row):
            where[node] = (i + 0.5) / len(row)

    def positions() -> list[int]:
        pos = [0] * len(layer)
        for row in rows:
            for i, node in enumerate(row):
                pos[node] = i
        return pos

    for row in rows:
        place(row)
    best = [list(row) for row in rows]
    fewest = crossings(positions(), layer, edges)
    for _ in range(SWEEPS):
        for sweep, links in ((range(1, depth), above), (range(depth - 2, -1, -1), below)):
            for at in sweep:
                row = rows[at]
                row.sort(key=lambda v: (sum(where[u] for u in links[v]) / len(links[v])
                                        if links[v] else where[v]))
                place(row)
        found = crossings(positions(), layer, edges)
        if found >= fewest:
            break  # a sweep that gains nothing: later ones rarely do, and each costs a sort
        fewest, best = found, [list(row) for row in rows]
    return best
