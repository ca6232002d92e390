"""The typed graph: documents as nodes, ``ref``/``ref-list`` values as labelled edges."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from tropo.check.ids import upstream_aliases

if TYPE_CHECKING:
    from tropo.check.document import Doc


@dataclass(frozen=True)
class Node:
    id: str
    type: str | None
    path: str
    title: str
    fields: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "path": self.path}


class Edge(NamedTuple):
    """A labelled ref; a tuple, so a 100k-node graph builds its edges at C speed."""

    src: str
    field: str
    dst: str
    broken: bool

    def as_dict(self) -> dict[str, Any]:
        return {"from": self.src, "field": self.field, "to": self.dst, "broken": self.broken}


@dataclass
class Graph:
    nodes: dict[str, Node]
    edges: list[Edge]

    @cached_property
    def _out(self) -> dict[str, list[Edge]]:
        return _by(self.edges, attrgetter("src"))

    @cached_property
    def _in(self) -> dict[str, list[Edge]]:
        return _by(self.edges, attrgetter("dst"))

    def outbound(self, node_id: str) -> list[Edge]:
        return self._out.get(node_id, [])

    def inbound(self, node_id: str) -> list[Edge]:
        return self._in.get(node_id, [])

    @property
    def broken(self) -> int:
        return sum(1 for e in self.edges if e.broken)

    def blast(self, target: str, depth: int | None = None) -> dict[str, tuple[int, str]]:
        """Everything that transitively refs ``target``: id -> (distance, via field).
        Breadth-first over inbound edges: a node is settled when first reached, which in
        first-in first-out order is at its least distance, through the first such edge."""
        impacted: dict[str, tuple[int, str]] = {}
        queue: deque[tuple[str, int]] = deque([(target, 0)])
        into = self._in
        push = queue.append
        while queue:
            nid, dist = queue.popleft()
            if depth is not None and dist >= depth:
                continue
            dist += 1
            for src, via, _, _ in into.get(nid, ()):  # an Edge is a tuple: unpacked at C speed
                if src not in impacted and src != target:
                    impacted[src] = (dist, via)
                    push((src, dist))
        return impacted


    def nearest(self, target: str, limit: int) -> list[tuple[str, tuple[int, str]]]:
        """The ``limit`` nearest of :meth:`blast`, by (distance, id), walking no further
        than the distance that holds them."""
        if limit <= 0:
            return []
        found: dict[str, tuple[int, str]] = {}
        level, dist, into = [target], 0, self._in
        while level and len(found) < limit:
            dist += 1
            nxt = []
            for nid in level:
                for src, via, _, _ in into.get(nid, ()):
                    if src not in found and src != target:
                        found[src] = (dist, via)
                        nxt.append(src)
            level = nxt
        return sorted(found.items(), key=lambda kv: (kv[1][0], kv[0]))[:limit]

    def reach_counts(self, targets: Iterable[str]) -> dict[str, int]:
        """``len(self.blast(t))`` for each target. Walks one by one while the reaches are
        small; once they add up to the size of the graph, once per strongly connected
        component instead (every member of a cycle reaches what the others do)."""
        out: dict[str, int] = {}
        by_component: dict[int, int] = {}
        for t in dict.fromkeys(targets):
            if sum(out.values()) <= len(self._in):
                out[t] = len(self.blast(t))
                continue
            if not by_component:  # switching: what was walked already counts
                by_component = {c: out[d] for d in out if (c := self._components.get(d)) is not None}
            c = self._components.get(t)
            if c is None:
                out[t] = len(self.blast(t))
            else:
                if c not in by_component:
                    by_component[c] = len(self.blast(t))
                out[t] = by_component[c]
        return out

    @cached_property
    def _components(self) -> dict[str, int]:
        """Each node in a cycle (a strongly connected component of two or more, or with a
        self-ref) -> its component's number; Tarjan's algorithm, iteratively."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        stack: list[str] = []
        out: dict[str, int] = {}
        into = self._in
        loops = {e.src for e in self.edges if e.src == e.dst}
        for root in list(into):
            if root in index:
                continue
            work = [(root, iter(into.get(root, ())))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            while work:
                node, edges = work[-1]
                pushed = False
                for src, _, _, _ in edges:
                    if src not in index:
                        index[src] = low[src] = len(index)
                        stack.append(src)
                        on_stack.add(src)
                        work.append((src, iter(into.get(src, ()))))
                        pushed = True
                        break
                    if src in on_stack:
                        low[node] = min(low[node], index[src])
                if pushed:
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1 or node in loops:
                        number = len(out)
                        out.update((m, number) for m in members)
        return out


def _by(edges: list[Edge], end: Callable[[Edge], str]) -> dict[str, list[Edge]]:
    """Edges grouped by one of their ends."""
    out: dict[str, list[Edge]] = {}
    for e in edges:
        out.setdefault(end(e), []).append(e)
    return out


def build_graph(docs: list[Doc], root_name: str) -> Graph:
    """First document per id names the node (walk order); every document's refs are
    edges, broken when their target names no node. A target that is vivary-tropo's id
    of a node (``caf-n-code`` for ``Café Ünïcode.md``) is an edge to that node."""
    nodes: dict[str, Node] = {}
    for d in docs:
        if d.id is not None and d.id not in nodes:
            nodes[d.id] = Node(d.id, d.type, d.rel, d.title, d.fields)
    edges = [(d.id, key, target) for d in docs if d.id is not None
             for key, target, _line in d.refs if isinstance(target, str)]
    return assemble(nodes, edges, root_name)


def assemble(nodes: dict[str, Node], edges: list[tuple[str, str, str]], root_name: str) -> Graph:
    """The graph of ``nodes`` and the (source, field, target) refs between them, targets
    resolved as :func:`build_graph` says."""
    aliases: dict[str, str] = {}
    if any(target not in nodes for _, _, target in edges):  # only then worth building
        aliases = upstream_aliases(((n.path, n.id) for n in nodes.values()), nodes, root_name)
    # Sort plain tuples (compared in C), then build: the dataclass's own ordering
    # compares in Python and cost a third of `graph` at 20k nodes.
    rows = sorted((src, key, aliases.get(target, target), target not in nodes and target not in aliases)
                  for src, key, target in edges)
    return Graph(nodes, [Edge(*row) for row in rows])
