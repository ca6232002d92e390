"""Project workspace observations and order strings in one interpreter: vivary-core's when it
is importable (the oracle's Python), else ours. Reads ``{"observations": [...], "strings":
[...]}`` on stdin; prints each observation's graph (nodes and edges by id, or the error's
kind), whether it is canonical, its repair topology, and the strings in path order."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def _suite() -> tuple[Callable[..., Any], ...]:
    try:
        from vivary_core.capsule_compile import repair_topology_fingerprint
        from vivary_core.workspace_model import (
            _path_sort_key,
            project_workspace_graph,
            repair_graph_is_canonical,
        )
    except ImportError:
        from tropo.governed.collation import path_key
        from tropo.governed.workspace_graph import is_canonical, project, topology_fingerprint

        return project, is_canonical, topology_fingerprint, path_key
    return project_workspace_graph, repair_graph_is_canonical, repair_topology_fingerprint, _path_sort_key


def _graph(project: Callable[..., Any], canonical: Callable[..., Any], topology: Callable[..., Any],
           observation: Any) -> Any:
    try:
        graph = project(observation)
    except ValueError:
        return {"error": "ValueError"}
    unknowns = sorted(json.dumps(unknown, sort_keys=True) for unknown in graph["unknowns"])
    return {**graph, "nodes": sorted(graph["nodes"], key=lambda n: n["id"]),
            "edges": sorted(graph["edges"], key=lambda e: e["id"]), "unknowns": unknowns,
            "canonical": canonical(graph), "topology": topology(graph)}


def main() -> None:
    project, canonical, topology, key = _suite()
    spec = json.load(sys.stdin)
    graphs = [_graph(project, canonical, topology, o) for o in spec["observations"]]
    print(json.dumps({"graphs": graphs, "order": sorted(spec["strings"], key=key)}, sort_keys=True))


if __name__ == "__main__":
    main()
