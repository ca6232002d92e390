"""The typed graph: documents as nodes, ``ref``/``ref-list`` values as labelled edges."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from tropo.document import Doc


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
    _out: dict[str, list[Edge]] = field(default_factory=dict, repr=False)
    _in: dict[str, list[Edge]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for e in self.edges:
            self._out.setdefault(e.src, []).append(e)
            self._in.setdefault(e.dst, []).append(e)

    def outbound(self, node_id: str) -> list[Edge]:
        return self._out.get(node_id, [])

    def inbound(self, node_id: str) -> list[Edge]:
        return self._in.get(node_id, [])

    @property
    def broken(self) -> int:
        return sum(1 for e in self.edges if e.broken)

    def blast(self, target: str, depth: int | None = None) -> dict[str, tuple[int, str]]:
        """Everything that transitively refs ``target``: id -> (distance, via field).
        Breadth-first over inbound edges, so the first visit is the nearest."""
        impacted: dict[str, tuple[int, str]] = {}
        queue = deque((e.src, 1, e.field) for e in self.inbound(target))
        while queue:
            nid, dist, via = queue.popleft()
            if nid == target or nid in impacted or (depth is not None and dist > depth):
                continue
            impacted[nid] = (dist, via)
            queue.extend((e.src, dist + 1, e.field) for e in self.inbound(nid))
        return impacted


def build_graph(docs: list[Doc]) -> Graph:
    """First document per id names the node (walk order); every document's refs are
    edges, broken when their target names no node."""
    nodes: dict[str, Node] = {}
    for d in docs:
        if d.id is not None and d.id not in nodes:
            nodes[d.id] = Node(d.id, d.type, d.rel, d.title, d.fields)
    # Sort plain tuples (compared in C), then build: the dataclass's own ordering
    # compares in Python and cost a third of `graph` at 20k nodes.
    rows = sorted(
        (d.id, key, target, target not in nodes)
        for d in docs if d.id is not None
        for key, target, _line in d.refs if isinstance(target, str)
    )
    return Graph(nodes, [Edge(*row) for row in rows])
