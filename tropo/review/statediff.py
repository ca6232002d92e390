"""``tropo diff`` at the cost of what changed: the part of two graphs a change touched.

git names the paths that differ between the two sides; only those documents are read
and analysed, on each side. Everything else the graph diff needs comes from the two
sides' check states (:mod:`tropo.check.incremental`): every node id, and every ref for the
edges into ids that appeared or vanished and for blast radii. The shapes returned hold
just the touched nodes and edges, and :func:`tropo.review.graphdiff.delta` gives the same
answer on them as on whole graphs (tests hold the two to each other). None means "do it
the whole way": a config changed, an id is held twice, too many files changed, or a
side has no usable state.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tropo.check import incremental
from tropo.check.checkstate import CheckState
from tropo.check.graph import Edge
from tropo.check.roots import root_in
from tropo.git import diff as gitdiff
from tropo.git import gitcli
from tropo.git.snapshot import Source
from tropo.review.graphdiff import EdgeRow, Shape

if TYPE_CHECKING:
    from tropo.check.document import Doc
    from tropo.check.workspace import Workspace

_MAX_CHANGED = 2000  # beyond this, whole graphs (cached per snapshot) are as cheap


@dataclass(frozen=True)
class _Side:
    """One side of a diff: a tree, what differs from it (index or working tree), and
    the check state of the result."""

    tree: str
    changes: tuple[gitdiff.Change, ...]
    state: CheckState


def shapes(start: Path | None, old: Source, new: Source) -> tuple[Shape, Shape] | None:
    """The touched parts of the graphs of ``old`` (a revision) and ``new``, or None."""
    here = (start or Path.cwd()).resolve()
    place = incremental.place_of(here, Source.worktree())
    if place is None or old.kind != "rev":
        return None
    try:
        a, b = _side(place, here, old), _side(place, here, new)
        if a is None or b is None or a.state.configs != b.state.configs:
            return None
        changed = _changed_paths(place, a, b)
        if changed is None:
            return None
        ws_a, ws_b = _analysed(place, a, changed), _analysed(place, b, changed)
    except gitcli.GitError:
        return None
    if ws_a is None or ws_b is None:
        return None
    return _shapes(a.state, ws_a, b.state, ws_b, set(changed))


def _side(place: incremental.Place, here: Path, source: Source) -> _Side | None:
    """A side whose root is the working tree's (else the whole way must decide)."""
    changes: tuple[gitdiff.Change, ...] = ()
    if source.kind == "rev":
        assert source.rev is not None
        tree = gitdiff.tree_of(place.top, source.rev)
        root = root_in(place.top, here, tree)
    else:
        delta = incremental.delta_of(place, source)
        if delta.head is None or delta.conflicted:
            return None
        tree, changes = gitdiff.tree_of(place.top, delta.head), delta.changes
        root = root_in(place.top, here) if source.kind == "index" else place.root
    if root != place.root:
        return None
    state = incremental.tree_state(place, tree)
    if state is not None and changes:
        state = incremental.patched_state(place, state, changes)
    return _Side(tree, changes, state) if state is not None else None


def _changed_paths(place: incremental.Place, a: _Side, b: _Side) -> list[str] | None:
    """The workspace-relative documents that may differ between the sides."""
    changes = [*gitdiff.between(place.top, a.tree, b.tree, place.pathspec), *a.changes, *b.changes]
    docs = incremental.changed_documents(place, a.state, changes)
    if docs is None or len(docs) > _MAX_CHANGED:
        return None
    return sorted(set(docs))


def _analysed(place: incremental.Place, side: _Side, rels: list[str]) -> Workspace | None:
    """The documents at ``rels`` as this side has them, analysed under its schema."""
    wanted = {place.prefix + rel for rel in rels}
    found = {c.rel: c for c in gitdiff.blobs_at(place.top, side.tree, sorted(wanted))}
    found.update((c.rel, c) for c in side.changes if c.rel in wanted)
    return incremental.analyse(place, side.state, found.values())


def _shapes(state_a: CheckState, ws_a: Workspace, state_b: CheckState, ws_b: Workspace,
            changed: set[str]) -> tuple[Shape, Shape] | None:
    docs_a, docs_b = ws_a.analyzed[0], ws_b.analyzed[0]
    ids_a, ids_b = _ids(state_a), _ids(state_b)
    touched = {d.id for d in (*docs_a, *docs_b) if d.id is not None}
    if any(ids_a.get(i, 0) > 1 or ids_b.get(i, 0) > 1 for i in touched):
        return None  # which document names a node held twice: the whole graph decides
    appeared = {i for i in touched if (i in ids_a) != (i in ids_b)}
    return (_shape(state_a, ws_a, docs_a, ids_a, appeared, changed),
            _shape(state_b, ws_b, docs_b, ids_b, appeared, changed))


def _ids(state: CheckState) -> dict[str, int]:
    counts: dict[str, int] = {}
    for doc_id in state.ids:
        if doc_id:
            counts[doc_id] = counts.get(doc_id, 0) + 1
    return counts


def _shape(state: CheckState, ws: Workspace, docs: list[Doc], ids: dict[str, int],
           appeared: set[str], changed: set[str]) -> Shape:
    """The touched documents' nodes and edges, plus the edges of untouched documents
    into ids that appeared or vanished (their brokenness is what changed)."""
    nodes: dict[str, tuple[str | None, str, Any]] = {
        d.id: (d.type, d.rel, d.fields) for d in docs if d.id is not None}
    edges: list[EdgeRow] = [(d.id, key, target, target not in ids) for d in docs if d.id is not None
                            for key, target, _ in d.refs if isinstance(target, str)]
    refs = state.refs
    for k, target in enumerate(refs.target):
        if target in appeared:
            rel = state.rels[refs.doc[k]]
            src = state.ids[refs.doc[k]]
            if rel not in changed and src:
                edges.append((src, refs.field[k], target, target not in ids))
                nodes.setdefault(src, (ws.type_of(rel), rel, ("unchanged", rel)))

    def all_edges() -> list[Edge]:
        ids_of = state.ids
        return [Edge(ids_of[doc], field, target, False)
                for doc, field, target in zip(refs.doc, refs.field, refs.target, strict=True)
                if ids_of[doc]]

    return Shape(nodes, edges, lambda nid: nodes[nid][2], None, ids, all_edges)
