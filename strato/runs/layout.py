"""How a run's state is laid out in its commit's tree, private to the run store: the
tables that grow with the run (root steps, dispatches, generations) one blob per entry,
so a transition writes the entries it changed and the trees above them, O(changed), and
the rest of the state in one small blob. Every reader still gets the one document.

    spec.yaml                        the spec frozen at plan time
    state/layout.json                {"format": 2, "tables": [...]}: the version marker
    state/run.json                   the state without its tables (canonical JSON)
    state/<bb>/<table>.<key>         one entry of a table, canonical JSON; <bb>: the
                                     first two hex digits of the SHA-1 of the key (256
                                     folders, so no tree is rewritten whole, and a step
                                     and its generation share one); <key> percent-encoded

A commit written before this layout (format 1) holds the whole state as a top-level
`run.json`; it is read as it always was, and the next transition on it writes format 2.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from strato.runs.engine.table import LIVE, StatusIndex, Table
from tropo.git import chain
from tropo.git.objects import blob_data, tree_entries, tree_of
from tropo.git.types import Oid, Repository

FORMAT = 2
STATE = "state"
# a table's folder under state/ -> where the table sits in the state
TABLES: dict[str, tuple[str, ...]] = {
    "steps": ("scope", "steps"),
    "dispatches": ("dispatches",),
    "generations": ("generations",),
}
STEPS = "steps"
Delta = dict[str, bytes | None]  # key -> its new encoded entry, None when removed


class LayoutError(ValueError):
    """A run commit this store cannot read: no state in it, or a newer format."""


def bucket(key: str) -> str:
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:2]


def entry_name(table: str, key: str) -> str:
    """A table's key as a tree entry name: the table, a dot, the key percent-encoded
    (dots too: never `/`, and the first dot ends the table's name)."""
    return f"{table}." + quote(key, safe="").replace(".", "%2E")


def _copy(value: Any) -> Any:
    """A private copy of a committed JSON value."""
    return json.loads(chain.encode(value))


def _split(doc: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The state without its tables (copied only along their paths), and the tables."""
    rest = dict(doc)
    tables: dict[str, dict[str, Any]] = {}
    for name, path in TABLES.items():
        node = rest
        for key in path[:-1]:
            inner = node.get(key)
            if not isinstance(inner, dict):
                break
            node[key] = node = dict(inner)
        else:
            value = node.get(path[-1])
            if isinstance(value, dict):
                tables[name] = value
                del node[path[-1]]
    return rest, tables


@dataclass(frozen=True)
class Change:
    """One transition's tree edit, and what the commit will hold once it lands."""

    edit: dict[str, Any]
    rest: bytes
    tables: dict[str, Delta | None]  # per table its changed entries; None: table gone


class Live:
    """The last commit of one run a store wrote or read, parsed once and kept up to date
    by the store's own transitions (a commit's content never changes). Its parsed
    entries are shared by every snapshot made from it and never changed in place: a new
    commit replaces the entries it changed."""

    def __init__(self, commit: str, tree: Oid | None, spec: Oid | None, rest: bytes,
                 entries: dict[str, dict[str, bytes]], version: int) -> None:
        self.commit, self.tree, self.spec, self.rest, self.version = commit, tree, spec, rest, version
        self.entries = entries
        self.objects = {name: {k: json.loads(b) for k, b in e.items()} for name, e in entries.items()}
        steps = self.objects.get(STEPS, {})
        self.counts: Counter[str] = Counter(_status(v) for v in steps.values())
        self.live = {s: {k for k, v in steps.items() if _status(v) == s} for s in LIVE}

    @classmethod
    def document(cls, commit: str, tree: Oid | None, spec: Oid | None, doc: Mapping[str, Any],
                 version: int = 1) -> Live:
        """A commit whose state is one document (format 1, or a run about to be planned)."""
        rest, tables = _split(doc)
        entries = {name: {k: chain.encode(v) for k, v in dict.items(t)} for name, t in tables.items()}
        return cls(commit, tree, spec, chain.encode(rest), entries, version)

    def state(self) -> dict[str, Any]:
        """The state as one document, each table a :class:`Table` over the entries."""
        doc: dict[str, Any] = json.loads(self.rest)
        for name, path in TABLES.items():
            if name in self.objects:
                index = None
                if name == STEPS:
                    index = StatusIndex(dict(self.counts), {s: frozenset(self.live[s]) for s in LIVE})
                node = doc
                for key in path[:-1]:
                    node = node[key]
                node[path[-1]] = Table(self.objects[name], _copy, index, (self, self.commit))
        return doc

    def diff(self, doc: Mapping[str, Any]) -> Change:
        """What writing ``doc`` as the next commit changes: the entries its tables'
        operations took that differ from this commit's, the rest if it differs, the
        layout if tables came or went. A table not made by :meth:`state` of this commit
        (replaced whole, or a new run) is compared entry by entry."""
        rest_doc, tables = _split(doc)
        rest = chain.encode(rest_doc)
        whole = self.version != FORMAT
        inner: dict[str, Any] = {}
        edit: dict[str, Any] = {STATE: inner}
        if self.version == 1:
            edit["run.json"] = None
        if whole or rest != self.rest:
            inner["run.json"] = rest
        if whole or sorted(tables) != sorted(self.entries):
            inner["layout.json"] = chain.encode({"format": FORMAT, "tables": sorted(tables)})
        changes: dict[str, Delta | None] = {}
        folders: dict[str, dict[str, bytes | None]] = {}
        for name in self.entries.keys() - tables.keys():
            changes[name] = None
            for key in self.entries[name]:
                folders.setdefault(bucket(key), {})[entry_name(name, key)] = None
        for name, table in tables.items():
            before = self.entries.get(name, {})
            ours = not whole and isinstance(table, Table) and table.origin == (self, self.commit)
            keys = table.touched if isinstance(table, Table) and ours else before.keys() | dict.keys(table)
            delta: Delta = {}
            for key in keys:
                if dict.__contains__(table, key):
                    encoded = chain.encode(dict.__getitem__(table, key))
                    if whole or before.get(key) != encoded:
                        delta[key] = encoded
                elif key in before:
                    delta[key] = None
            changes[name] = delta
            for key, entry in delta.items():
                folders.setdefault(bucket(key), {})[entry_name(name, key)] = entry
        inner.update(folders)
        return Change(edit, rest, changes)

    def apply(self, commit: str, tree: Oid, change: Change) -> None:
        """This run is now at ``commit`` (``tree``), written from this one by ``change``."""
        for name, delta in change.tables.items():
            if delta is None:
                del self.entries[name], self.objects[name]
                continue
            entries, objects = self.entries.setdefault(name, {}), self.objects.setdefault(name, {})
            for key, data in delta.items():
                new = None if data is None else json.loads(data)
                if name == STEPS:
                    self._restatus(key, _status(objects.get(key)), _status(new))
                if data is None:
                    entries.pop(key, None)
                    objects.pop(key, None)
                else:
                    entries[key], objects[key] = data, new
        self.commit, self.tree, self.rest, self.version = commit, tree, change.rest, FORMAT

    def _restatus(self, key: str, old: str | None, new: str | None) -> None:
        if old == new:
            return
        if old is not None:
            self.counts[old] -= 1
            self.live.get(old, set()).discard(key)
        if new is not None:
            self.counts[new] += 1
            if new in self.live:
                self.live[new].add(key)


def _status(value: Any) -> Any:
    return value.get("status") if isinstance(value, dict) else None


def read(repo: Repository, commit: str) -> Live | None:
    """A run commit as it is in git; None when it holds no state at all."""
    tree = tree_of(repo, commit)
    if tree is None:
        return None
    top = tree_entries(repo, tree)
    spec = top["spec.yaml"][0] if "spec.yaml" in top else None
    if STATE not in top:
        if "run.json" not in top:
            return None
        return Live.document(commit, tree, spec, json.loads(blob_data(repo, top["run.json"][0])))
    inner = tree_entries(repo, top[STATE][0])
    layout = json.loads(blob_data(repo, inner["layout.json"][0])) if "layout.json" in inner else None
    if not isinstance(layout, dict) or layout.get("format") != FORMAT or "run.json" not in inner:
        raise LayoutError(f"commit {commit[:12]}: a run state this version cannot read ({layout!r})")
    tables = layout.get("tables", [])
    if not isinstance(tables, list) or not set(tables) <= TABLES.keys():
        raise LayoutError(f"commit {commit[:12]}: unknown tables {tables!r}")
    entries: dict[str, dict[str, bytes]] = {name: {} for name in tables}
    for folder, (oid, is_tree) in inner.items():
        if not is_tree:
            continue
        for name, (blob, _) in tree_entries(repo, oid).items():
            table, _, key = name.partition(".")
            if table not in entries:
                raise LayoutError(f"commit {commit[:12]}: {folder}/{name} is in no table of the run")
            entries[table][unquote(key)] = blob_data(repo, blob)
    return Live(commit, tree, spec, blob_data(repo, inner["run.json"][0]), entries, FORMAT)
