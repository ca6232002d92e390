"""The semantic difference between two graphs, and proposed changes applied in memory.

Pure functions over :class:`tropo.check.graph.Graph`: ``diff`` is what a pull request does to
the graph (not to the text); ``apply_change`` is upstream's ``plan`` spec (remove,
retype, break, add) producing the graph the change would leave.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tropo.check.graph import Edge, Graph

_MISSING = object()


class SpecError(ValueError):
    """A change spec that does not have the documented shape."""


EdgeRow = tuple[str, str, str, bool]  # (from, field, to, broken)


@dataclass
class Shape:
    """A graph as ``delta`` compares it: per node (type, path, a token equal whenever the
    fields are), edges as rows, the fields on demand, and the Graph only when asked.
    Built from a Graph, from the graph cache without decoding every node's fields, or
    (``tropo.review.statediff``) as just the part a change touched: then ``ids`` holds every
    node id and ``all_edges`` every edge, for membership and blast radii."""

    nodes: Mapping[str, tuple[str | None, str, Any]]
    edges: list[EdgeRow]
    fields: Callable[[str], Mapping[str, Any]]
    build: Callable[[], Graph] | None  # None for a partial shape: it has no whole graph
    ids: Container[str] | None = None
    all_edges: Callable[[], list[Edge]] | None = None

    def holds(self, node_id: str) -> bool:
        return node_id in (self.ids if self.ids is not None else self.nodes)

    @classmethod
    def of(cls, g: Graph) -> Shape:
        return cls({n.id: (n.type, n.path, n.fields) for n in g.nodes.values()},
                   [(e.src, e.field, e.dst, e.broken) for e in g.edges],
                   lambda nid: g.nodes[nid].fields, lambda: g)

    @cached_property
    def graph(self) -> Graph:
        if self.build is None:
            raise LookupError("a partial shape has no whole graph")
        return self.build()

    @cached_property
    def links(self) -> Graph:
        """Just the edges, enough for blast radii: no node's fields are decoded."""
        if "graph" in self.__dict__:
            return self.graph
        return Graph({}, self.all_edges() if self.all_edges else [Edge(*e) for e in self.edges])


def _edge(row: EdgeRow) -> dict[str, Any]:
    return {"from": row[0], "field": row[1], "to": row[2], "broken": row[3]}


def delta(old: Shape, new: Shape, *, fields: bool = False) -> dict[str, Any]:
    """Nodes added, removed, retyped (and with ``fields``: moved and fields changed);
    edges added, removed and newly broken (present on both sides, broken only now)."""
    old_e = {r[:3]: r for r in old.edges}
    new_e = {r[:3]: r for r in new.edges}
    both = sorted(n for n in new.nodes if n in old.nodes)
    out: dict[str, Any] = {
        "nodes_added": sorted(set(new.nodes) - set(old.nodes)),
        "nodes_removed": sorted(set(old.nodes) - set(new.nodes)),
        "nodes_retyped": [{"id": n, "from": old.nodes[n][0], "to": new.nodes[n][0]}
                          for n in both if old.nodes[n][0] != new.nodes[n][0]],
        "edges_added": [_edge(r) for k, r in sorted(new_e.items()) if k not in old_e],
        "edges_removed": [_edge(r) for k, r in sorted(old_e.items()) if k not in new_e],
        "edges_newly_broken": [_edge(r) for k, r in sorted(new_e.items())
                               if k in old_e and r[3] and not old_e[k][3]],
    }
    if fields:
        out["nodes_moved"] = [{"id": n, "from": old.nodes[n][1], "to": new.nodes[n][1]}
                              for n in both if old.nodes[n][1] != new.nodes[n][1]]
        out["fields_changed"] = [
            {"id": n, "field": f, "from": _show(a), "to": _show(b)}
            for n in both if old.nodes[n][2] != new.nodes[n][2]
            for f, a, b in field_changes(old.fields(n), new.fields(n))
        ]
    return out


def _show(value: Any) -> Any:
    return None if value is _MISSING else value


def field_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, before, after) for every field whose value differs; absent is ``_MISSING``."""
    return [(k, old.get(k, _MISSING), new.get(k, _MISSING))
            for k in sorted(set(old) | set(new))
            if old.get(k, _MISSING) != new.get(k, _MISSING)]


def changed_ids(d: Mapping[str, Any]) -> list[str]:
    """Every node a delta touches: added, removed, retyped, moved, edited, or whose
    outbound edges appeared, vanished or broke."""
    ids: set[str] = set(d["nodes_added"]) | set(d["nodes_removed"])
    ids |= {r["id"] for key in ("nodes_retyped", "nodes_moved", "fields_changed")
            for r in d.get(key, [])}
    ids |= {e["from"] for key in ("edges_added", "edges_removed", "edges_newly_broken")
            for e in d[key]}
    return sorted(ids)


def blast_of(ids: Iterable[str], old: Shape, new: Shape, *, limit: int) -> dict[str, dict[str, Any]]:
    """Each id's dependents (reverse refs, any depth) in the new graph, or in the old one
    for a node the change removed: how many, and the ``limit`` nearest."""
    sides: dict[int, tuple[Graph, list[str]]] = {}
    for nid in ids:
        side = new if new.holds(nid) else old
        sides.setdefault(id(side), (side.links, []))[1].append(nid)
    out = {}
    for g, wanted in sides.values():
        counts = g.reach_counts(wanted)
        for nid in wanted:
            out[nid] = {"count": counts[nid], "nearest": [{"id": d, "distance": dist, "via": via}
                                                          for d, (dist, via) in g.nearest(nid, limit)]}
    return dict(sorted(out.items()))


def _ids(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError(f"{what} must be a list of ids")
    return value


def _edge_specs(value: Any, what: str, need_field: bool) -> list[dict[str, str]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise SpecError(f"{what} must be a list of tables like {{from = \"a\", to = \"b\"}}")
    for v in value:
        if not isinstance(v.get("from"), str) or not isinstance(v.get("to"), str) or \
                ("field" in v and not isinstance(v["field"], str)):
            raise SpecError(f"each {what} entry needs string from and to (field optional)")
    return [dict(v, field=v.get("field", "ref")) if need_field else v for v in value]


def check_spec(spec: Mapping[str, Any]) -> None:
    """Raise SpecError unless ``spec`` has only known keys of the right shapes."""
    unknown = sorted(set(spec) - {"remove", "retype", "break", "add"})
    if unknown:
        raise SpecError(f"unknown key {unknown[0]!r} (known: remove, retype, break, add)")
    _ids(spec.get("remove", []), "remove")
    retype = spec.get("retype", {})
    if not isinstance(retype, dict) or not all(isinstance(v, str) for v in retype.values()):
        raise SpecError('retype must be a table like {id = "type"}')
    _edge_specs(spec.get("break", []), "break", False)
    _edge_specs(spec.get("add", []), "add", True)


def apply_change(g: Graph, spec: Mapping[str, Any]) -> Graph:
    """The graph after removing, retyping, breaking and adding as ``spec`` says; broken
    flags recomputed against the nodes that remain. ``g`` is not modified."""
    check_spec(spec)
    removed = set(spec.get("remove", []))
    nodes = {k: v for k, v in g.nodes.items() if k not in removed}
    for nid, t in spec.get("retype", {}).items():
        if nid in nodes:
            nodes[nid] = dataclasses.replace(nodes[nid], type=t)
    edges = [(e.src, e.field, e.dst) for e in g.edges if e.src not in removed]
    for b in spec.get("break", []):
        edges = [k for k in edges if not (k[0] == b["from"] and k[2] == b["to"]
                                          and ("field" not in b or k[1] == b["field"]))]
    edges += [(a["from"], a.get("field", "ref"), a["to"]) for a in spec.get("add", [])]
    return Graph(nodes, sorted(Edge(s, f, t, t not in nodes) for s, f, t in edges))
