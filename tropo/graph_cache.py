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

from tropo import repo as gitrepo
from tropo.atomic import write_atomic
from tropo.graph import Edge, Graph, Node
from tropo.workspace import Workspace

_VERSION = 1
_KEEP = 16  # graphs kept; the oldest go first


def _path(ws: Workspace) -> Path | None:
    repository = ws.snapshot.repo()
    fingerprint = ws.snapshot.fingerprint()
    if repository is None or fingerprint is None or not ws.use_cache:
        return None
    rel = ws.root.relative_to(ws.snapshot.top).as_posix()
    name = hashlib.sha256(f"{fingerprint}|{rel}".encode()).hexdigest()[:40]
    return gitrepo.private_dir(repository) / f"graphs.v{_VERSION}" / name


def graph_of(ws: Workspace) -> Graph:
    """The workspace's graph, from the cache when its fingerprint was seen before."""
    path = _path(ws)
    if path is not None:
        with contextlib.suppress(OSError, EOFError, ValueError, TypeError):
            nodes, edges = marshal.loads(path.read_bytes())
            return Graph({n[0]: Node(*n) for n in nodes}, [Edge(*e) for e in edges])
    g = ws.graph()
    if path is not None:
        data = ([(n.id, n.type, n.path, n.title, n.fields) for n in g.nodes.values()],
                [(e.src, e.field, e.dst, e.broken) for e in g.edges])
        with contextlib.suppress(OSError, ValueError):
            write_atomic(path, marshal.dumps(data))
            _prune(path.parent)
    return g


def _prune(directory: Path) -> None:
    files = sorted(directory.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[_KEEP:]:
        old.unlink(missing_ok=True)
