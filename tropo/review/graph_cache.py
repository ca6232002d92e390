"""Whole graphs remembered by snapshot fingerprint under ``.git/vivary/graphs/``.

A commit's tree (or the index, or a clean work tree) always yields the same graph, so
the graph of a fingerprint seen before loads in one read instead of a walk over every
document. Content-addressed and disposable, like the parse cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
from pathlib import Path
from typing import Any

from tropo.check.graph import Edge, Graph, Node
from tropo.check.workspace import Workspace
from tropo.fs.atomic import write_atomic
from tropo.git import repo as gitrepo
from tropo.review.graphdiff import Shape

_VERSION = 2
_KEEP = 16  # graphs kept; the oldest go first


def _path(ws: Workspace) -> Path | None:
    repository = ws.snapshot.repo()
    fingerprint = ws.snapshot.fingerprint()
    if repository is None or fingerprint is None or not ws.use_cache:
        return None
    rel = ws.root.relative_to(ws.snapshot.top).as_posix()
    name = hashlib.sha256(f"{fingerprint}|{rel}".encode()).hexdigest()[:40]
    return gitrepo.private_dir(repository) / f"graphs.v{_VERSION}" / name


def _rows(g: Graph) -> tuple[list[tuple[Any, ...]], list[tuple[str, str, str, bool]]]:
    """Cached form: each node's fields as their own marshal bytes, decoded only on demand."""
    return ([(n.id, n.type, n.path, n.title, marshal.dumps(n.fields)) for n in g.nodes.values()],
            [(e.src, e.field, e.dst, e.broken) for e in g.edges])


def _to_graph(nodes: list[tuple[Any, ...]], edges: list[tuple[str, str, str, bool]]) -> Graph:
    return Graph({n[0]: Node(n[0], n[1], n[2], n[3], marshal.loads(n[4])) for n in nodes},
                 [Edge(*e) for e in edges])


def shape_of(ws: Workspace) -> Shape:
    """The workspace's graph as ``diff`` compares it; the Graph is built only if needed."""
    path = _path(ws)
    if path is not None:
        with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
            nodes, edges = marshal.loads(path.read_bytes())
            by_id = {n[0]: n for n in nodes}
            return Shape({n[0]: (n[1], n[2], n[4]) for n in nodes}, edges,
                         lambda nid: marshal.loads(by_id[nid][4]), lambda: _to_graph(nodes, edges))
    g = ws.graph()
    if path is not None:
        with contextlib.suppress(OSError, ValueError):
            write_atomic(path, marshal.dumps(_rows(g)))
            _prune(path.parent)
    return Shape.of(g)


def graph_of(ws: Workspace) -> Graph:
    """The workspace's graph, from the cache when its fingerprint was seen before."""
    return shape_of(ws).graph


def _prune(directory: Path) -> None:
    files = sorted(directory.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[_KEEP:]:
        old.unlink(missing_ok=True)
