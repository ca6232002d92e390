"""How a run's state is laid out in its commit's tree, private to the run store: the
tables that grow with the run (root steps, dispatches, generations) spread over 256
small blobs by the hash of each key, so a transition rewrites the few blobs holding the
entries it changed and the trees above them, not the whole run, and a reader that has
seen nothing reads 256 blobs, not one per entry. The rest of the state is one small
blob. Every reader still gets the one document.

    spec.yaml              the spec frozen at plan time
    state/layout.json      {"format": 3, "tables": [...]}: the version marker
    state/run.json         the state without its tables (canonical JSON)
    state/<bb>             the entries whose key's SHA-1 starts with the two hex digits
                           <bb>: {"<table>": {"<key>": entry, ...}, ...}, canonical JSON

Format 3 keeps a fanout step's growing members as entries of a table of their own,
`fanouts` (:mod:`strato.runs.parts`); format 2 keeps them in the step's entry. A run
keeps the format it was planned in, so a clone of an older version that is working on a
run never finds it turned into one it cannot read. A commit written before this layout
(format 1) holds the whole state as a top-level `run.json`; it is read as it always was,
and the next transition on it writes format 2.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strato.runs import parts
from strato.runs.engine.table import LIVE, StatusIndex, Table, copy_json, fresh_copy
from tropo.git import chain
from tropo.git.objects import blob_data, tree_entries, tree_of
from tropo.git.types import Oid, Repository

FORMAT = 3  # the format a new run is planned in
READS = (2, 3)  # the formats laid out in buckets
WRITES = {0: FORMAT, 1: 2, 2: 2, 3: 3}  # a commit's format (0: none yet) -> its next one's
STATE = "state"
# a table's name in the layout -> where the table sits in the state
TABLES: dict[str, tuple[str, ...]] = {
    "steps": ("scope", "steps"),
    "dispatches": ("dispatches",),
    "generations": ("generations",),
}
STEPS = "steps"
Delta = dict[str, Any]  # key -> its new `"key":entry` bytes (MISSING when removed)
MISSING = object()


class LayoutError(ValueError):
    """A run commit this store cannot read: no state in it, or a newer format."""


def bucket(key: str) -> str:
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:2]


def _name(key: str) -> bytes:
    """`"key":`, the start of a member of a canonical JSON object."""
    return chain.encode(key) + b":"


def _member(key: str, value: Any) -> bytes:
    """`"key":value`, a member of a canonical JSON object (its own copy: :func:`_value`)."""
    return _name(key) + chain.encode(value)


def _value(key: str, member: bytes) -> Any:
    return json.loads(member[len(_name(key)):])


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
    tables: dict[str, Delta | None]  # per table its changed entries; None: the table is gone
    statuses: dict[str, Any]  # the status of each step written


class Live:
    """The last commit of one run a store wrote or read, parsed once and kept up to date
    by the store's own transitions (a commit's content never changes). Its entries are
    shared by every snapshot made from it and never changed in place: a new commit
    replaces the entries it changed with their bytes as written, decoded into new
    objects when a state is next made of it."""

    def __init__(self, commit: str, tree: Oid | None, spec: Oid | None, rest: bytes,
                 objects: dict[str, dict[str, Any]], version: int,
                 members: dict[str, dict[str, set[str]]] | None = None) -> None:
        """``members``: bucket -> table -> keys, when the reader already knows them."""
        self.commit, self.tree, self.spec, self.rest, self.version = commit, tree, spec, rest, version
        self.objects = objects
        self.members: dict[str, dict[str, set[str]]] = members if members is not None else {}
        # (table, key) -> `"key":entry` as canonical JSON, made when first needed
        self.encoded: dict[tuple[str, str], bytes] = {}
        for name, entries in objects.items() if members is None else ():
            for key in entries:
                self.members.setdefault(bucket(key), {}).setdefault(name, set()).add(key)
        # entries a transition wrote and nothing has read since: decoded from their
        # bytes when a state is next made (a run that moves several transitions at once
        # decodes its entries once, not once a transition)
        self.unread: set[tuple[str, str]] = set()
        self.status: dict[str, Any] = {}  # each step's status
        self.counts: Counter[str] = Counter()
        self.live: dict[str, set[str]] = {s: set() for s in LIVE}
        for key, value in self.objects.get(STEPS, {}).items():
            self._restatus(key, True, _status(value))
        self.parts: dict[str, set[str]] = {}  # a fanout step -> the keys of its parts
        for key in self.objects.get(parts.TABLE, {}):
            self.parts.setdefault(_step(key), set()).add(key)
        self.joined: dict[str, Any] = {}  # a fanout step -> its entry whole, once made
        self.stale: dict[str, set[str]] = {}  # a step in `joined` -> its parts written since

    @property
    def writes(self) -> int:
        """The format of the next commit written from this one."""
        return WRITES[self.version]

    @classmethod
    def document(cls, commit: str, tree: Oid | None, spec: Oid | None, doc: Mapping[str, Any],
                 version: int = 1) -> Live:
        """A commit whose state is one document (format 1, or a run about to be planned)."""
        rest, tables = _split(doc)
        objects = {name: {k: copy_json(v) for k, v in dict.items(t)} for name, t in tables.items()}
        return cls(commit, tree, spec, chain.encode(rest), objects, version)

    def fork(self) -> Live:
        """A copy of this view to move along commits that have not landed yet (this one
        stays at the commit other readers share); entries are shared, never changed."""
        twin = copy.copy(self)
        twin.objects = {name: dict(entries) for name, entries in self.objects.items()}
        twin.members = {b: {n: set(keys) for n, keys in held.items()} for b, held in self.members.items()}
        twin.encoded, twin.unread, twin.status = dict(self.encoded), set(self.unread), dict(self.status)
        twin.counts, twin.live = Counter(self.counts), {s: set(keys) for s, keys in self.live.items()}
        twin.parts, twin.joined = {sid: set(keys) for sid, keys in self.parts.items()}, dict(self.joined)
        twin.stale = {sid: set(keys) for sid, keys in self.stale.items()}
        return twin

    def state(self) -> dict[str, Any]:
        """The state as one document, each table a :class:`Table` over the entries."""
        self._decode()
        doc: dict[str, Any] = json.loads(self.rest)
        for name, path in TABLES.items():
            if name in self.objects:
                index = None
                entries = self.objects[name]
                if name == STEPS:
                    index = StatusIndex(dict(self.counts), {s: frozenset(self.live[s]) for s in LIVE})
                    if self.parts:
                        entries = {**entries, **{sid: self._joined(sid) for sid in self.parts}}
                node = doc
                for key in path[:-1]:
                    node = node[key]
                fresh = parts.taken if self.writes == 3 else fresh_copy
                node[path[-1]] = Table(entries, fresh, index, (self, self.commit))
        return doc

    def _decode(self) -> None:
        """Decode the entries written since the last read."""
        for name, key in self.unread:
            self.objects[name][key] = _value(key, self.encoded[name, key])
        self.unread.clear()

    def _joined(self, sid: str) -> Any:
        """A fanout step's entry whole, from its entry and its parts (decoded): made
        from the last one made and the parts written since, when there is one."""
        held = self.objects[parts.TABLE]
        if sid in self.joined:
            if sid in self.stale:
                written = ((k, held.get(k, MISSING)) for k in self.stale.pop(sid))
                base = parts.split(self.joined[sid])[1]
                self.joined[sid] = parts.join(self.objects[STEPS][sid], written, base, MISSING)
        else:
            self.joined[sid] = parts.join(self.objects[STEPS][sid], ((k, held[k]) for k in self.parts[sid]))
        return self.joined[sid]

    def _members(self, sid: str) -> parts.Members:
        """A step's members kept apart, as committed (none: not a fanout)."""
        return parts.split(self._joined(sid))[1] if sid in self.parts else {}

    def diff(self, doc: Mapping[str, Any]) -> Change:
        """What writing ``doc`` as the next commit changes: the entries its tables'
        operations took whose JSON differs from this commit's (and the blobs holding
        them), the rest if it differs, the layout if tables came or went. A table not
        made by :meth:`state` of this commit (replaced whole, or a new run) is compared
        entry by entry."""
        rest_doc, tables = _split(doc)
        rest = chain.encode(rest_doc)
        whole = self.version != self.writes
        apart = self.writes == 3 and STEPS in tables  # fanout members kept apart
        names = sorted([*tables, *[parts.TABLE] * apart])
        inner: dict[str, Any] = {}
        edit: dict[str, Any] = {STATE: inner}
        if self.version == 1:
            edit["run.json"] = None
        if whole or rest != self.rest:
            inner["run.json"] = rest
        if whole or names != sorted(self.objects):
            inner["layout.json"] = chain.encode({"format": self.writes, "tables": names})
        changes: dict[str, Delta | None] = {name: None for name in self.objects.keys() - set(names)}
        statuses: dict[str, Any] = {}
        dirty = {bucket(key) for name in changes for key in self.objects[name]}
        fanned: dict[str, Any] = {}  # the parts that changed: key -> element, or MISSING
        if apart:
            self._decode()
        for name, table in tables.items():
            before = self.objects.get(name, {})
            ours = not whole and isinstance(table, Table) and table.origin == (self, self.commit)
            keys = table.touched if isinstance(table, Table) and ours else before.keys() | dict.keys(table)
            delta: Delta = {}
            split = apart and name == STEPS
            for key in keys:
                if dict.__contains__(table, key):
                    value = stored = dict.__getitem__(table, key)
                    if split:
                        stored, members = parts.split(value)
                        fanned.update(parts.changed(key, members, self._members(key), MISSING, ours))
                    encoded = _member(key, stored)
                    if whole or key not in before or encoded != self._encoded(name, key):
                        delta[key] = encoded
                        if name == STEPS:
                            statuses[key] = _status(value)
                elif key in before:
                    delta[key] = MISSING
                    if split:
                        fanned.update(parts.changed(key, {}, self._members(key), MISSING, ours))
            changes[name] = delta
            dirty.update(bucket(key) for key in delta)
        if apart:
            changes[parts.TABLE] = {k: v if v is MISSING else _member(k, v) for k, v in fanned.items()}
            dirty.update(bucket(key) for key in fanned)
        for folder in dirty:
            inner[folder] = self._bucket(folder, changes) or None
        return Change(edit, rest, changes, statuses)

    def _encoded(self, name: str, key: str) -> bytes:
        if (name, key) not in self.encoded:
            self.encoded[name, key] = _member(key, self.objects[name][key])
        return self.encoded[name, key]

    def _bucket(self, folder: str, changes: Mapping[str, Delta | None]) -> bytes:
        """The blob of one bucket once ``changes`` land (empty: no entry left in it), as
        canonical JSON, joined from its entries' own."""
        held = self.members.get(folder, {})
        parts = []
        for name in sorted(set(held) | {n for n, d in changes.items() if d}):
            delta = changes.get(name, {})
            if delta is None:
                continue
            keys = held.get(name, set()) | {k for k in delta if bucket(k) == folder}
            members = []
            for key in sorted(keys):
                value = delta.get(key)
                if value is None:
                    members.append(self._encoded(name, key))
                elif value is not MISSING:
                    members.append(value)
            if members:
                parts.append(_name(name) + b"{" + b",".join(members) + b"}")
        return b"{" + b",".join(parts) + b"}" if parts else b""

    def apply(self, commit: str, tree: Oid, change: Change) -> None:
        """This run is now at ``commit`` (``tree``), written from this one by ``change``."""
        for name, delta in change.tables.items():
            if delta is None:
                for key in self.objects.pop(name):
                    self.members[bucket(key)][name].discard(key)
                    self.encoded.pop((name, key), None)
                    self.unread.discard((name, key))
                    if name == STEPS:
                        self._restatus(key, False)
                continue
            objects = self.objects.setdefault(name, {})
            for key, encoded in delta.items():
                if name == STEPS:
                    self._restatus(key, encoded is not MISSING, change.statuses.get(key))
                    self._rejoin(key, encoded is not MISSING)
                elif name == parts.TABLE:
                    self._repart(key, encoded is not MISSING)
                members = self.members.setdefault(bucket(key), {}).setdefault(name, set())
                if encoded is MISSING:
                    objects.pop(key, None)
                    members.discard(key)
                    self.encoded.pop((name, key), None)
                    self.unread.discard((name, key))
                else:
                    objects[key], self.encoded[name, key] = None, encoded
                    self.unread.add((name, key))
                    members.add(key)
        if parts.TABLE not in self.objects:
            self.parts.clear()
            self.joined.clear()
            self.stale.clear()
        self.commit, self.tree, self.rest, self.version = commit, tree, change.rest, self.writes

    def _rejoin(self, sid: str, present: bool) -> None:
        """The step ``sid``'s entry was written (``present``) or removed: its entry whole
        is made again when next asked for."""
        if present and sid in self.joined:
            self.stale.setdefault(sid, set())
        else:
            self.joined.pop(sid, None)
            self.stale.pop(sid, None)

    def _repart(self, key: str, present: bool) -> None:
        """The part ``key`` was written (``present``) or removed."""
        sid = _step(key)
        if sid in self.joined:
            self.stale.setdefault(sid, set()).add(key)
        held = self.parts.setdefault(sid, set())
        if present:
            held.add(key)
        else:
            held.discard(key)
            if not held:
                del self.parts[sid]

    def _restatus(self, key: str, present: bool, new: Any = None) -> None:
        """The step ``key`` now has the status ``new``, or is gone (not ``present``)."""
        if key in self.status:
            old = self.status.pop(key)
            self.counts[old] -= 1
            self.live.get(old, set()).discard(key)
        if present:
            self.status[key] = new
            self.counts[new] += 1
            if new in self.live:
                self.live[new].add(key)


def restamp(doc: Mapping[str, Any], was: tuple[Live, str], now: tuple[Live, str]) -> None:
    """``doc``'s tables, made over the commit ``was`` (or restamped to it), now stand over
    ``now``, a commit written from ``doc`` on it: their untaken entries are that
    commit's too, so the next diff of ``doc`` still looks only at the entries taken."""
    for path in TABLES.values():
        node: Any = doc
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, Table) and node.origin == was:
            node.origin = now


def _step(key: str) -> str:
    """The step a part belongs to."""
    return key.split("/", 1)[0]


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
    version = layout.get("format") if isinstance(layout, dict) else None
    if type(version) is not int or version not in READS or "run.json" not in inner:
        raise LayoutError(f"commit {commit[:12]}: a run state this version cannot read ({layout!r})")
    assert isinstance(layout, dict)
    tables = layout.get("tables", [])
    known = TABLES.keys() | ({parts.TABLE} if version == 3 else set())
    if not isinstance(tables, list) or not set(tables) <= known:
        raise LayoutError(f"commit {commit[:12]}: unknown tables {tables!r}")
    objects: dict[str, dict[str, Any]] = {name: {} for name in tables}
    members: dict[str, dict[str, set[str]]] = {}
    for folder, (oid, is_tree) in inner.items():
        if folder in ("layout.json", "run.json"):
            continue
        if is_tree or len(folder) != 2:
            raise LayoutError(f"commit {commit[:12]}: state/{folder} is not a bucket of the run's tables")
        held = json.loads(blob_data(repo, oid))
        if not isinstance(held, dict) or not set(held) <= objects.keys():
            raise LayoutError(f"commit {commit[:12]}: state/{folder} holds what no table of the run does")
        for name, entries in held.items():
            if not isinstance(entries, dict) or any(bucket(k) != folder for k in entries):
                raise LayoutError(f"commit {commit[:12]}: state/{folder} holds entries of another bucket")
            objects[name].update(entries)
            members.setdefault(folder, {})[name] = set(entries)
    live = Live(commit, tree, spec, blob_data(repo, inner["run.json"][0]), objects, version, members)
    for sid in live.parts:
        try:
            if not isinstance(live.objects.get(STEPS, {}).get(sid), dict):
                raise parts.PartsError("no step of theirs")
            live._joined(sid)
        except parts.PartsError as exc:
            raise LayoutError(f"commit {commit[:12]}: the parts of step {sid!r}: {exc}") from None
    return live
