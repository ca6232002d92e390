"""A whole-workspace check that costs what changed since a commit, not what exists.

Three ways to the same answer, cheapest first:

1. **results**: the summary stored under a key made of HEAD, what git says differs
   from it, and the bytes of the changed files. A warm check runs one git command and
   reads one small file; it imports neither pygit2 nor YAML (this module defers them).
2. **the state of HEAD's tree** (:mod:`tropo.checkstate`): stored per tree, or brought
   forward from the last stored tree through git's diff of the two, then patched with
   the files that differ from HEAD. Only those files are read and analysed.
3. **every document**, as :mod:`tropo.workspace` checks it: when a config changed, the
   index holds a conflict, an analysis used file dates, or there is no commit yet.

Every cache lives under ``.git/vivary/`` and is keyed by tropo's code as well, so a stale
answer is impossible by construction; tests hold the three ways to the same findings.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tropo import gitcli, gitdelta
from tropo.checkstate import CheckState
from tropo.findings import Finding, Summary
from tropo.roots import CONFIG_NAME, THIN_CONFIG, find_root
from tropo.source import Source
from tropo.store import Shelf, code_stamp

if TYPE_CHECKING:
    from tropo.workspace import Workspace

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
    pre-commit hook print. Raises what :func:`tropo.workspace.open_workspace` raises."""
    place = _place(start or Path.cwd(), source) if use_cache and source.kind != "rev" else None
    if place is None:
        from tropo.workspace import open_workspace

        return summarize(open_workspace(start, source, use_cache=use_cache))

    def workspace() -> Workspace:
        from tropo.snapshot import open_snapshot
        from tropo.workspace import Workspace

        return Workspace(place.root, open_snapshot(place.root, source))

    return _answer(place, source, workspace)


def summarize(ws: Workspace) -> Outcome:
    """The check of the whole of ``ws``, by the cheapest of the three ways."""
    repository = ws.snapshot.repo()
    if not ws.use_cache or repository is None:
        return _full(ws)
    from tropo.repo import private_dir

    place = Place(ws.root, ws.snapshot.top, private_dir(repository))
    source = ws.snapshot.source
    if source.kind != "rev":
        return _answer(place, source, lambda: ws)
    commit = ws.snapshot.commit()
    assert commit is not None
    state = _tree_state(place, str(commit.tree_id))
    return Outcome(state.summary(), state.strict) if state is not None else _full(ws)


def _answer(place: Place, source: Source, workspace: Callable[[], Workspace]) -> Outcome:
    """The working tree's or the index's check: stored, patched, or from every document
    of ``workspace()`` (opened only then)."""
    try:
        delta = _delta(place, source)
    except gitcli.GitError:
        return _full(workspace())
    key = _result_key(place, source, delta)
    results = _results(place)
    decoded = _decode(results.get(key)) if key is not None else None
    if decoded is not None:
        return decoded
    outcome = None
    if key is not None and delta.head is not None:
        state = _tree_state(place, gitdelta.tree_of(place.top, delta.head))
        patched = _patched_state(place, state, delta.changes) if state is not None else None
        if patched is not None:
            outcome = Outcome(patched.summary(), patched.strict)
    if outcome is None:
        ws = workspace()
        outcome = _full(ws)
        if ws.dated:  # file dates can change with no byte changing: not kept
            return outcome
    if key is not None:
        results.put(key, (outcome.summary.checked, outcome.summary.clean,
                          [astuple(f) for f in outcome.summary.findings], outcome.strict))
    return outcome


def _full(ws: Workspace) -> Outcome:
    report = ws.check()
    return Outcome(Summary(report.checked, report.clean, report.findings), ws.config.strict)


def _place(start: Path, source: Source) -> Place | None:
    """The workspace's place as git sees it, without opening the repository; None when
    there is no repository (or anything unusual) so the slow path explains."""
    start = start.resolve()
    try:
        out = gitcli.run(start if start.is_dir() else start.parent, "rev-parse",
                         "--show-toplevel", "--git-common-dir").splitlines()
    except (gitcli.GitError, OSError):
        return None
    if len(out) != 2:
        return None
    top = Path(out[0]).resolve()
    private = (start / out[1]).resolve() / "vivary" if not Path(out[1]).is_absolute() \
        else Path(out[1]).resolve() / "vivary"
    root = find_root(start) if source.kind == "worktree" else _index_root(top, start)
    if root is None:
        return None
    try:
        root.relative_to(top)
    except ValueError:
        return None
    return Place(root, top, private)


def _index_root(top: Path, start: Path) -> Path | None:
    """The nearest folder from ``start`` up to ``top`` whose config is in the index, as
    :func:`tropo.workspace.open_workspace` finds it for ``--staged``."""
    try:
        parts = start.relative_to(top).parts
    except ValueError:
        return None
    dirs = ["/".join(parts[:depth]) for depth in range(len(parts), -1, -1)]
    wanted = [posixpath.join(d, name) for d in dirs for name in (THIN_CONFIG, CONFIG_NAME)]
    try:
        records = gitcli.records(top, "ls-files", "--stage", "-z", "--",
                                 *(f":(literal){w}" for w in wanted))
    except gitcli.GitError:
        return None
    present = set()
    for rec in records:
        meta, _, path = rec.partition("\t")
        if not meta.startswith("120000"):  # a symlinked config is not read
            present.add(path)
    for d in dirs:
        if posixpath.join(d, THIN_CONFIG) in present or posixpath.join(d, CONFIG_NAME) in present:
            return top.joinpath(*d.split("/")) if d else top
    return None


def _delta(place: Place, source: Source) -> gitdelta.Delta:
    if source.kind == "index":
        return gitdelta.index(place.top, place.pathspec)
    return gitdelta.worktree(place.top, place.pathspec)


def _results(place: Place) -> Shelf:
    return Shelf(place.private, "results", _RESULTS_KEPT)


def _namespace(place: Place) -> str:
    """What every cached check of this workspace shares: tropo's code and the root."""
    text = f"{code_stamp()}\0{place.prefix}\0{place.root.name}"
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


def _result_key(place: Place, source: Source, delta: gitdelta.Delta) -> str | None:
    """HEAD, each changed path with its new blob or, for files only the disk knows, a
    digest of their bytes; None when there is nothing to key on (no commit, a conflict,
    a file that vanished while being read)."""
    if delta.head is None or delta.conflicted:
        return None
    h = hashlib.blake2b(f"{source.kind}\0{delta.head}".encode(), digest_size=20)
    for change in sorted(delta.changes, key=lambda c: c.rel):
        h.update(f"\0{change.rel}\0{change.mode}\0{change.oid}".encode("utf-8", "surrogateescape"))
        if change.oid is None and not change.gone and _relevant(change.rel):
            try:
                h.update(_disk_digest(place.top / change.rel, change.mode))
            except OSError:
                return None
    return f"{_namespace(place)}-{h.hexdigest()}"


def _relevant(rel: str) -> bool:
    """Whether a file's bytes can change a check: documents and configs."""
    return rel.endswith((".md", ".markdown", ".toml"))


def _disk_digest(path: Path, mode: int) -> bytes:
    if mode == gitdelta.LINK:
        return os.fsencode(os.readlink(path))
    h = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.digest()


def _decode(hit: Any) -> Outcome | None:
    try:
        checked, clean, rows, strict = hit
        return Outcome(Summary(checked, clean, [Finding(*row) for row in rows]), bool(strict))
    except (TypeError, ValueError):
        return None


def _is_config(rel: str) -> bool:
    return (posixpath.basename(rel) == CONFIG_NAME or rel == THIN_CONFIG
            or rel.endswith("/" + THIN_CONFIG) or rel.startswith(".tropo/"))


def _tree_state(place: Place, tree: str) -> CheckState | None:
    """The check of a tree: stored, brought forward from the newest stored tree, or made
    from every document. None when no state can stand for it (its analyses used file
    dates, or its schema is broken); that too is remembered, as a reason."""
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
        from tropo.roots import ConfigError

        try:
            state = _whole_tree_state(place, tree)
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
            changes = gitdelta.between(place.top, older.rpartition("-")[2], tree, place.pathspec)
        except gitcli.GitError:  # that tree is gone (gc): try an older one
            continue
        return _patched_state(place, base, changes) if len(changes) <= _DERIVE_LIMIT else None
    return None


def _whole_tree_state(place: Place, tree: str) -> CheckState | None:
    from tropo.repo import require
    from tropo.snapshot import tree_snapshot
    from tropo.workspace import Workspace

    return Workspace(place.root, tree_snapshot(require(place.top), tree)).state()


def _patched_state(place: Place, state: CheckState,
                   changes: tuple[gitdelta.Change, ...]) -> CheckState | None:
    """``state`` with the changed documents analysed anew under its schema; None when a
    change reaches the schema (a config, or a file it read) or an analysis used file dates."""
    from tropo.files import DeltaSnapshot, Entry
    from tropo.workspace import Workspace, state_rows, walk_key

    touched: list[str] = []
    entries: list[Entry] = []
    for change in changes:
        if not change.rel.startswith(place.prefix):
            continue
        rel = change.rel[len(place.prefix):]
        if _is_config(rel) or rel in state.configs:
            return None
        if not rel.endswith((".md", ".markdown")):
            continue
        touched.append(rel)
        if not change.gone:
            entries.append(Entry(change.rel, change.oid, change.mode))
    if not touched:
        return state
    try:
        blobs = gitcli.blobs(place.top, (e.oid for e in entries if e.oid is not None))
    except gitcli.GitError:
        return None
    configs = {place.prefix + rel: data for rel, data in state.configs.items()}
    delta_ws = Workspace(place.root, DeltaSnapshot(place.top, entries, blobs, configs),
                         use_cache=False, config_paths=state.config_paths)
    try:
        docs, extra = delta_ws.analyzed
    except LookupError:  # the schema asked for a file the state did not record
        return None
    if delta_ws.dated:
        return None
    rows, extra_rows = state_rows(docs, extra)
    return state.patched(touched, rows, extra_rows, walk_key)
