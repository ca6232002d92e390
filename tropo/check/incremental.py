"""A whole-workspace check that costs what changed since a commit, not what exists.

Three ways to the same answer, cheapest first:

1. **results**: the summary stored under a key made of HEAD, what git says differs
   from it, and the bytes of the changed files. A warm check runs one git command and
   reads one small file; it imports neither pygit2, YAML nor the schema and document
   modules (this module defers :mod:`tropo.check.workspace`, some 25 ms of imports, to
   the paths that read documents; the workspace never calls back into this module).
2. **the state of HEAD's tree** (:mod:`tropo.check.checkstate`): stored per tree, or brought
   forward from the last stored tree through git's diff of the two, then patched with
   the files that differ from HEAD. Only those files are read and analysed.
3. **every document**, as :mod:`tropo.check.workspace` checks it: when a config changed, the
   index holds a conflict, an analysis used file dates, or there is no commit yet.

Every cache lives under ``.git/vivary/``, keyed by content and by tropo's own code, so an
answer never outlives what it was computed from; tests hold the three ways to the same
findings on every source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tropo.check.checkstate import CheckState
from tropo.check.findings import Finding, Summary
from tropo.check.roots import ConfigError, find_root, is_config, read_by_tropo, root_in
from tropo.fs.private import PlantedLink, private_folder
from tropo.fs.records import Shelf, code_stamp
from tropo.git import diff as gitdiff
from tropo.git import gitcli
from tropo.git.snapshot import Source

if TYPE_CHECKING:
    from tropo.check.graph import Graph
    from tropo.check.workspace import Workspace

_STATES_KEPT = 4  # tree states (a few MB each at 20k documents)
_RESULTS_KEPT = 32  # summaries (small)
_DERIVE_LIMIT = 5000  # changed files between two trees beyond which a full check is as cheap


@dataclass(frozen=True)
class Place:
    """Where a workspace sits: its root, the repository's top and private folder."""

    root: Path
    top: Path
    private: Path

    @property
    def prefix(self) -> str:
        rel = self.root.relative_to(self.top).as_posix()
        return "" if rel == "." else rel + "/"

    @property
    def pathspec(self) -> str:
        return f":(literal){self.prefix[:-1]}" if self.prefix else "."


@dataclass(frozen=True)
class Outcome:
    """A whole-workspace check, with the strictness its schema asks for."""

    summary: Summary
    strict: bool


def check(start: Path | None, source: Source, *, use_cache: bool = True) -> Outcome:
    """The check of the whole workspace containing ``start``: what ``tropo check`` and the
    pre-commit hook print. Raises what :func:`tropo.check.workspace.open_workspace` raises."""
    place = place_of(start or Path.cwd(), source) if use_cache and source.kind != "rev" else None
    if place is None:
        from tropo.check.workspace import open_workspace

        return summarize(open_workspace(start, source, use_cache=use_cache))

    def workspace() -> Workspace:
        from tropo.check.workspace import Workspace
        from tropo.git.snapshot import open_snapshot

        return Workspace(place.root, open_snapshot(place.root, source, read_by_tropo))

    return _answer(place, source, workspace)


def summarize(ws: Workspace) -> Outcome:
    """The check of the whole of ``ws``, by the cheapest of the three ways."""
    place = _cached_place(ws)
    if place is None:
        return _full(ws)
    source = ws.snapshot.source
    if source.kind != "rev":
        return _answer(place, source, lambda: ws)
    state = _commit_state(ws, place)
    return Outcome(state.summary(ws.root_name), state.strict) if state is not None else _full(ws)


def graph(ws: Workspace) -> Graph:
    """``ws.graph()`` as ``tropo graph`` and ``blast`` show it, from the check state the
    warm check keeps (patched with what differs from HEAD) when there is one: at 100k
    documents, reading them all again cost seconds and most of a GiB."""
    place = _cached_place(ws)
    state = None
    if place is not None and ws.snapshot.source.kind == "rev":
        state = _commit_state(ws, place)
    elif place is not None:
        try:
            delta = delta_of(place, ws.snapshot.source)
        except gitcli.GitError:
            delta = None
        if delta is not None and delta.head is not None:
            state = tree_state(place, gitdiff.tree_of(place.top, delta.head), head=True)
            state = patched_state(place, state, delta.changes) if state is not None else None
    return ws.graph() if state is None else state.graph(ws.type_of, ws.root_name)


def _cached_place(ws: Workspace) -> Place | None:
    """Where ``ws``'s caches are; None when it is checked without them."""
    repository = ws.snapshot.repo()
    if not ws.use_cache or repository is None:
        return None
    from tropo.git.repo import private_dir

    try:
        return Place(ws.root, ws.snapshot.top, private_dir(repository))
    except PlantedLink:  # a folder planted under .git/vivary: checked without a cache
        return None


def _commit_state(ws: Workspace, place: Place) -> CheckState | None:
    commit = ws.snapshot.commit()
    assert commit is not None
    return tree_state(place, str(commit.tree_id))


def _answer(place: Place, source: Source, workspace: Callable[[], Workspace]) -> Outcome:
    """The working tree's or the index's check: stored, patched, or from every document
    of ``workspace()`` (opened only then)."""
    results = _results(place)
    try:
        delta, early = _delta_and_head_state(place, source, results)
    except gitcli.GitError:
        return _full(workspace())
    key = _result_key(place, delta)
    decoded = _decode(results.get(key)) if key is not None else None
    if decoded is not None:
        return decoded
    outcome = None
    if key is not None and delta.head is not None:
        state = early[1] if early is not None and early[0] == delta.head else \
            tree_state(place, gitdiff.tree_of(place.top, delta.head), head=True)
        patched = patched_state(place, state, delta.changes) if state is not None else None
        if patched is not None:
            outcome = Outcome(patched.summary(place.root.name), patched.strict)
    if outcome is None:
        ws = workspace()
        outcome = _full(ws)
        if ws.dated:  # file dates can change with no byte changing: not kept
            return outcome
    if key is not None:
        results.put(key, (outcome.summary.checked, outcome.summary.clean,
                          [astuple(f) for f in outcome.summary.findings], outcome.strict))
    return outcome


def _delta_and_head_state(place: Place, source: Source, results: Shelf) -> tuple[
        gitdiff.Delta, tuple[str, CheckState | None] | None]:
    """What differs from HEAD; and, when no stored result can answer (a cold check: HEAD's
    state is needed whatever git says), HEAD's commit and its tree's state, made while
    ``git status`` walks the work tree in its own process: on two cores the walk costs
    no wall time. Raises :class:`gitcli.GitError` as :func:`delta_of` does."""
    if source.kind != "worktree" or results.keys(_namespace(place) + "-"):
        return delta_of(place, source), None
    with gitdiff.start_worktree(place.top, place.pathspec) as started:
        head = gitdiff.head_tree(place.top)
        early = (head[0], tree_state(place, head[1], head=True)) if head is not None else None
        return gitdiff.worktree_delta(place.top, started), early


def _full(ws: Workspace) -> Outcome:
    report = ws.check()
    return Outcome(Summary(report.checked, report.clean, report.findings), ws.config.strict)


def place_of(start: Path, source: Source) -> Place | None:
    """The workspace's place as git sees it, without opening the repository; None when
    there is no repository (or anything unusual) so the slow path explains."""
    start = start.resolve()
    if not start.is_dir():  # missing: git would answer for its parent, and caches land in it
        return None
    try:
        out = gitcli.run(start, "rev-parse", "--show-toplevel", "--git-common-dir").splitlines()
    except (gitcli.GitError, OSError):
        return None
    if len(out) != 2:
        return None
    top = Path(out[0]).resolve()
    try:
        private = private_folder((start / out[1]).resolve())
    except PlantedLink:
        return None
    root = find_root(start) if source.kind == "worktree" else root_in(top, start)
    if root is None:
        return None
    try:
        root.relative_to(top)
    except ValueError:
        return None
    return Place(root, top, private)


def delta_of(place: Place, source: Source) -> gitdiff.Delta:
    if source.kind == "index":
        return gitdiff.index(place.top, place.pathspec)
    return gitdiff.worktree(place.top, place.pathspec)


def _results(place: Place) -> Shelf:
    return Shelf(place.private, "results", _RESULTS_KEPT)


def _namespace(place: Place) -> str:
    """What every cached check of this workspace shares: tropo's code and the root."""
    text = f"{code_stamp()}\0{place.prefix}\0{place.root.name}"
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


def _result_key(place: Place, delta: gitdiff.Delta) -> str | None:
    """Names the checked content (see :func:`tropo.git.gitdiff.fingerprint`) under this
    workspace's namespace; None when nothing names it."""
    found = gitdiff.fingerprint(place.top, delta, read_by_tropo)
    return f"{_namespace(place)}-{found}" if found is not None else None


def _decode(hit: Any) -> Outcome | None:
    try:
        checked, clean, rows, strict = hit
        return Outcome(Summary(checked, clean, [Finding(*row) for row in rows]), bool(strict))
    except (TypeError, ValueError):
        return None


def tree_state(place: Place, tree: str, *, head: bool = False) -> CheckState | None:
    """The check of a tree: stored, brought forward from the newest stored tree, or made
    from every document. None when no state can stand for it (its analyses used file
    dates, or its schema is broken); that too is remembered, as a reason. ``head``: the
    tree is HEAD's, so the work tree holds most of its blobs."""
    shelf = Shelf(place.private, "states", _STATES_KEPT)
    namespace = _namespace(place)
    key = f"{namespace}-{tree}"
    rec = shelf.get(key)
    if isinstance(rec, str):
        return None
    state = CheckState.from_record(rec) if rec is not None else None
    if state is not None:
        return state
    state = _derived_state(place, shelf, namespace, tree)
    if state is None:
        try:
            state = _whole_tree_state(place, tree, head)
        except ConfigError:
            shelf.put(key, "config error")
            return None
        if state is None:
            shelf.put(key, "dated")
            return None
    shelf.put(key, state.to_record())
    return state


def _derived_state(place: Place, shelf: Shelf, namespace: str, tree: str) -> CheckState | None:
    """The newest stored tree state patched with git's diff from that tree to ``tree``."""
    for older in shelf.keys(namespace + "-"):
        base = CheckState.from_record(shelf.get(older))
        if base is None:
            continue
        try:
            changes = gitdiff.between(place.top, older.rpartition("-")[2], tree, place.pathspec)
        except gitcli.GitError:  # that tree is gone (gc): try an older one
            continue
        return patched_state(place, base, changes) if len(changes) <= _DERIVE_LIMIT else None
    return None


def _whole_tree_state(place: Place, tree: str, head: bool) -> CheckState | None:
    from tropo.check.workspace import Workspace
    from tropo.git.snapshot import tree_snapshot

    snapshot = tree_snapshot(place.top, tree, worktree_copies=head, private=place.private)
    return Workspace(place.root, snapshot).state()


def patched_state(place: Place, state: CheckState,
                   changes: tuple[gitdiff.Change, ...]) -> CheckState | None:
    """``state`` with the changed documents analysed anew under its schema; None when a
    change reaches the schema (a config, or a file it read) or an analysis used file dates."""
    from tropo.check.workspace import state_rows, walk_key

    touched = changed_documents(place, state, changes)
    if touched is None:
        return None
    if not touched:
        return state
    analysed = analyse(place, state, [c for c in changes if c.rel[len(place.prefix):] in touched])
    if analysed is None:
        return None
    docs, extra = analysed.analyzed
    rows, extra_rows = state_rows(docs, extra)
    return state.patched(touched, rows, extra_rows, walk_key)


def changed_documents(place: Place, state: CheckState,
                      changes: Iterable[gitdiff.Change]) -> list[str] | None:
    """The workspace-relative documents among ``changes``; None when one of them reaches
    the schema ``state`` was made under (a config, or any file it read)."""
    touched = []
    for change in changes:
        if not change.rel.startswith(place.prefix):
            continue
        rel = change.rel[len(place.prefix):]
        if is_config(rel) or rel in state.configs:
            return None
        if rel.endswith((".md", ".markdown")):
            touched.append(rel)
    return touched


def analyse(place: Place, state: CheckState, changes: Iterable[gitdiff.Change]) -> Workspace | None:
    """A workspace of just the changed files (gone ones left out) under ``state``'s
    schema, its documents analysed; None when that cannot stand for the real thing."""
    from tropo.check.workspace import Workspace
    from tropo.git.snapshot import DeltaSnapshot, Entry

    entries = [Entry(c.rel, c.oid, c.mode) for c in changes if not c.gone]
    try:
        blobs = gitcli.blobs(place.top, (e.oid for e in entries if e.oid is not None))
    except gitcli.GitError:
        return None
    configs = {place.prefix + rel: data for rel, data in state.configs.items()}
    ws = Workspace(place.root, DeltaSnapshot(place.top, entries, blobs, configs),
                   use_cache=False, config_paths=state.config_paths)
    try:
        ws.analyzed  # noqa: B018 - analyse now: the schema may ask for what is not there
    except LookupError:  # the schema asked for a file the state did not record
        return None
    return None if ws.dated else ws
