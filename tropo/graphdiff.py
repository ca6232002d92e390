"""The semantic difference between two graphs, and proposed changes applied in memory.

Pure functions over :class:`tropo.graph.Graph`: ``diff`` is what a pull request does to
the graph (not to the text); ``apply_change`` is upstream's ``plan`` spec (remove,
retype, break, add) producing the graph the change would leave.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from tropo.graph import Edge, Graph

_MISSING = object()


class SpecError(ValueError):
    """A change spec that does not have the documented shape."""


def _key(e: Edge) -> tuple[str, str, str]:
    return (e.src, e.field, e.dst)


def delta(old: Graph, new: Graph, *, fields: bool = False) -> dict[str, Any]:
    """Nodes added, removed, retyped (and with ``fields``: moved and fields changed);
    edges added, removed and newly broken (present on both sides, broken only now)."""
    old_e = {_key(e): e for e in old.edges}
    new_e = {_key(e): e for e in new.edges}
    both = [n for n in new.nodes if n in old.nodes]
    out: dict[str, Any] = {
        "nodes_added": sorted(set(new.nodes) - set(old.nodes)),
        "nodes_removed": sorted(set(old.nodes) - set(new.nodes)),
        "nodes_retyped": [{"id": n, "from": old.nodes[n].type, "to": new.nodes[n].type}
                          for n in sorted(both) if old.nodes[n].type != new.nodes[n].type],
        "edges_added": [e.as_dict() for k, e in sorted(new_e.items()) if k not in old_e],
        "edges_removed": [e.as_dict() for k, e in sorted(old_e.items()) if k not in new_e],
        "edges_newly_broken": [e.as_dict() for k, e in sorted(new_e.items())
                               if k in old_e and e.broken and not old_e[k].broken],
    }
    if fields:
        out["nodes_moved"] = [{"id": n, "from": old.nodes[n].path, "to": new.nodes[n].path}
                              for n in sorted(both) if old.nodes[n].path != new.nodes[n].path]
        out["fields_changed"] = [
            {"id": n, "field": f, "from": _show(a), "to": _show(b)}
            for n in sorted(both)
            for f, a, b in field_changes(old.nodes[n].fields, new.nodes[n].fields)
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


def blast_of(ids: Iterable[str], old: Graph, new: Graph, *, limit: int) -> dict[str, dict[str, Any]]:
    """Each id's dependents (reverse refs, any depth) in the new graph, or in the old one
    for a node the change removed: how many, and the ``limit`` nearest."""
    out = {}
    for nid in ids:
        g = new if nid in new.nodes else old
        hits = sorted(g.blast(nid).items(), key=lambda kv: (kv[1][0], kv[0]))
        out[nid] = {"count": len(hits),
                    "nearest": [{"id": d, "distance": dist, "via": via} for d, (dist, via) in hits[:limit]]}
    return out


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
    edges = [_key(e) for e in g.edges if e.src not in removed]
    for b in spec.get("break", []):
        edges = [k for k in edges if not (k[0] == b["from"] and k[2] == b["to"]
                                          and ("field" not in b or k[1] == b["field"]))]
    edges += [(a["from"], a.get("field", "ref"), a["to"]) for a in spec.get("add", [])]
    return Graph(nodes, sorted(Edge(s, f, t, t not in nodes) for s, f, t in edges))
