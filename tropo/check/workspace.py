"""A workspace read from one source: its schema, documents, graph and check.

This is the I/O edge of tropo: it finds the root, lists files through a snapshot,
reads only the blobs the parse cache does not know, and hands pure functions the rest.
"""

from __future__ import annotations

import datetime
import gc
import hashlib
import os
import posixpath
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import astuple, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from tropo.check import document as docmod
from tropo.check import frontmatter, spread
from tropo.check.cache import (
    NOT_UTF8,
    TOO_LARGE,
    Fresh,
    blob_oid,
    doc_from_record,
    from_record,
    keep,
    parse_bytes,
    received,
    sent,
    to_record,
)
from tropo.check.checkstate import CheckState, DocRow, FindingRow
from tropo.check.config import (
    CONFIG_NAME,
    DEFAULT_EXCLUDE,
    THIN_CONFIG,
    Config,
    ConfigError,
    Schema,
    excluder,
    find_root,
    is_excluded,
    root_excluder,
    unknown_specs,
)
from tropo.check.document import Doc, Finding, Folder
from tropo.check.fields import KNOWN as KNOWN_SPECS
from tropo.check.findings import failing, grade
from tropo.check.graph import Graph, build_graph
from tropo.check.progress import Progress
from tropo.check.roots import read_by_tropo, root_in
from tropo.fs.private import PlantedLink
from tropo.fs.records import Store, code_stamp
from tropo.git.snapshot import LINK, MAX_BLOB, Entry, Snapshot, Source, SourceError

if TYPE_CHECKING:
    from tropo.git import log as gitlog

__all__ = ["ConfigError", "Source", "SourceError", "Workspace", "open_workspace"]


@dataclass
class CheckReport:
    """The outcome of ``check``: documents and findings in walk order."""

    docs: list[Doc]
    extra: list[Finding] = field(default_factory=list)  # findings that belong to no document

    @property
    def findings(self) -> list[Finding]:
        return [f for d in self.docs for f in d.findings] + self.extra

    @property
    def checked(self) -> int:
        return len(self.docs)

    @property
    def clean(self) -> int:
        return sum(1 for d in self.docs if not failing(d.findings))

    def graded(self, strict: bool) -> list[Finding]:
        return grade(self.findings, strict)


class Workspace:
    def __init__(self, root: Path, snapshot: Snapshot, *, use_cache: bool = True,
                 config_paths: Iterable[str] | None = None) -> None:
        """``config_paths`` names the nested configs when the snapshot does not list
        them all (a snapshot of changed files only)."""
        self.root = root
        self.snapshot = snapshot
        self.use_cache = use_cache
        prefix = root.relative_to(snapshot.top).as_posix() if root != snapshot.top else ""
        self._prefix = f"{prefix}/" if prefix else ""
        self.root_name = root.name
        self._dates: gitlog.Dates | None = None
        self.dated = False  # some document's check used file dates (history or mtime)
        self._config_paths = list(config_paths) if config_paths is not None else None
        self.config_reads: dict[str, bytes | None] = {}  # what the schema read, by path
        self._early: dict[str, tuple[str, frontmatter.Parsed, int]] = {}  # see _parse_early

    def _read_rel(self, rel: str) -> bytes | None:
        """A config file, remembered: a check state carries what its schema read."""
        data = self.config_reads[rel] = self.snapshot.read_path(self._prefix + rel)
        return data

    @cached_property
    def _entries(self) -> list[Entry]:
        """Every file of the workspace (relative to its root), default excludes pruned."""
        plen = len(self._prefix)
        default_excluded = excluder(DEFAULT_EXCLUDE)

        def prune(rel: str) -> bool:
            return not rel.startswith(self._prefix) or default_excluded(rel[plen:])

        listed = self.snapshot.entries(prune, None if self.use_cache else self._parse_early)
        return [Entry(e.rel[plen:], e.oid, e.mode) for e in listed] if plen else listed

    def _parse_early(self, index: list[Entry]) -> None:
        """Read and parse the index's documents while ``git status`` walks the work tree
        (a check without caches reads them all anyway), each to stand only for an entry
        the listing leaves with the index's oid. An overlay's excludes are not known yet."""
        try:
            excluded = root_excluder(self._read_rel)
        except (ConfigError, OSError):
            return  # the schema says why, later and in one place
        for entry in index:
            rel = entry.rel
            if entry.mode == LINK or entry.oid is None or not docmod.is_markdown(rel) \
                    or not rel.startswith(self._prefix) or excluded(rel[len(self._prefix):]):
                continue
            try:
                data = self.snapshot.read(entry)
            except OSError:
                continue  # said again, in its place, when the document is read
            self._early[rel] = (entry.oid, *parse_bytes(data))

    @cached_property
    def schema(self) -> Schema:
        nested: list[str] = []
        thin: list[str] = []
        for rel in self.config_paths():
            (thin if rel.endswith("/" + THIN_CONFIG) else nested).append(rel)
        schema = Schema(self._read_rel, [posixpath.dirname(rel) for rel in nested])
        for rel in thin:
            if not schema.excludes(posixpath.dirname(rel.removesuffix(THIN_CONFIG))):
                raise ConfigError(f"competing nested thin-v0.3 root: {posixpath.dirname(rel)}")
        return schema

    def config_paths(self) -> list[str]:
        """Nested ``tropo.toml`` (and thin configs) below the root."""
        if self._config_paths is None:
            names = ("/" + CONFIG_NAME, "/" + THIN_CONFIG)
            self._config_paths = [e.rel for e in self._entries if e.rel.endswith(names)]
        return self._config_paths

    def type_of(self, rel: str) -> str | None:
        """The type a document at ``rel`` has: its folder's, under that folder's schema."""
        rel_dir = rel.rpartition("/")[0]
        return self.schema.for_dir(rel_dir).type_for(rel_dir, self.root_name)

    def reads(self, rel: str) -> bool:
        """Whether a file at ``rel`` would be one of this workspace's documents (ignore
        rules aside): what a tool that only adds files must not add to someone's graph."""
        if not docmod.is_markdown(rel) or excluder(self.config.exclude)(rel):
            return False
        cfg = self.schema.for_dir(rel.rpartition("/")[0])
        return cfg is self.schema.root or not is_excluded(rel, cfg.exclude)

    @property
    def config(self) -> Config:
        return self.schema.root

    @property
    def config_file(self) -> str:
        """The file that holds this workspace's schema, for hints that name it."""
        return self.schema.file

    def dates(self) -> gitlog.Dates:
        from tropo.git import log as gitlog

        if self._dates is None:
            commit = self.snapshot.commit()  # none: no history, and no repository opened
            repository = self.snapshot.repo() if commit is not None else None
            self._dates = (
                gitlog.file_dates(repository, commit, use_cache=self.use_cache)
                if repository is not None and commit is not None else {}
            )
        return self._dates

    def _dates_for(self, rel: str) -> tuple[str | None, str | None]:
        found = self.dates().get(self._prefix + rel)
        if found:
            return found
        # Not committed yet: the file's own times, as vivary-tropo falls back to.
        try:
            st = os.stat(self.root / rel)
        except OSError:
            return None, None
        day = datetime.date.fromtimestamp
        return day(min(st.st_mtime, st.st_ctime)).isoformat(), day(st.st_mtime).isoformat()

    @cached_property
    def documents(self) -> tuple[list[Doc], list[Finding]]:
        """All documents in walk order, cross-file checks done; plus orphan findings."""
        with _acyclic():
            docs, extra = self.analyzed
            cross = CheckState.build((), False, {}, *state_rows(docs, [])).cross(self.root_name)
            return [replace(d, findings=d.findings + cross[index]) if index in cross else d
                    for index, d in enumerate(docs)], extra

    @cached_property
    def analyzed(self) -> tuple[list[Doc], list[Finding]]:
        """Each document checked on its own, in walk order; plus orphan findings."""
        schema = self.schema
        root_excluded = excluder(schema.root.exclude)
        where = self._cache_dir()
        cache = Store(where, "parse")
        memo = Store(where, "docs")
        folder = docmod.folders(schema, self.root_name, lambda cfg: _analysis_key(cfg, self.root_name))
        entries = sorted(
            (e for e in self._entries if docmod.is_markdown(e.rel) and not root_excluded(e.rel)),
            key=lambda e: walk_key(e.rel),
        )
        conflicted = {c[len(self._prefix):] for c in self.snapshot.conflicts()
                      if c.startswith(self._prefix)}
        progress = Progress(len(entries), "documents read")  # a terminal sees a long walk move
        with _acyclic(), closing(progress):
            extra = [finding for entry in entries if entry.mode == LINK
                     for finding in [self._link_finding(entry, folder)] if finding is not None]
            done = self._memoized(entries, conflicted, folder, memo, progress) if memo else {}

            def fresh(start: int, stop: int, seen: bool) -> list[Fresh]:
                return self._fresh(entries, start, stop, done, conflicted, folder, cache,
                                   progress if seen else None)

            # what the index's early parse left (a check without caches) is worth no child
            found = fresh(0, len(entries), True) if self._early else \
                spread.split(len(entries), fresh, sent, received)
        slots: list[Doc | None] = [None] * len(entries)  # walk order; None: no document there
        for index, doc in done.items():
            slots[index] = doc
        for index, doc, _, _, _, dated in found:
            slots[index] = doc
            self.dated = self.dated or dated
        if where is not None:
            spread.aside(lambda: keep(found, cache, memo))
        extra += self._schema_findings()
        return [doc for doc in slots if doc is not None], sorted(extra, key=lambda f: walk_key(f.path))

    def _memoized(self, entries: list[Entry], conflicted: set[str], folder: Callable[[str], Folder | None],
                  memo: Store, progress: Progress) -> dict[int, Doc]:
        """The documents the memo of analyses answers, by walk index: looked up here, not
        in a child, so the memo knows which records are still used when it is saved."""
        done = {}
        for index, entry in enumerate(entries):
            if entry.oid is None or entry.mode == LINK or entry.rel in conflicted:
                continue
            known = folder(entry.rel)
            if known is None:
                continue
            record = memo.get(f"{known[1]}\0{entry.rel}\0{entry.oid}")  # path and schema cannot differ
            if record is not None:
                done[index] = doc_from_record(record)
                progress.advance()
        return done

    def _schema_findings(self) -> list[Finding]:
        """One finding per schema file this check read that names an unknown field spec."""
        out = []
        for rel, raw in self.config_reads.items():
            found = unknown_specs(raw) if raw is not None else []
            if found:
                out.append(Finding(rel, found[0][0], "error", docmod.E104,
                                   "; ".join(what for _, what in found)
                                   + f" (known: {', '.join(KNOWN_SPECS)}, enum:a|b)"))
        return out

    def _fresh(self, entries: list[Entry], start: int, stop: int, done: dict[int, Doc],
               conflicted: set[str], folder: Callable[[str], Folder | None], cache: Store,
               progress: Progress | None) -> list[Fresh]:
        """Read, parse and check the documents among ``entries[start:stop]`` that ``done``
        does not hold (pure work: it writes nothing, so a child may do it); the caches are
        filled by the caller from what it returns. Symlinks are the caller's."""
        out: list[Fresh] = []
        for index in range(start, stop):
            entry = entries[index]
            if entry.mode == LINK or index in done:
                continue
            known = folder(entry.rel)
            if known is None:
                continue
            plan, schema_key = known
            if progress is not None:
                progress.advance()
            if entry.rel in conflicted:
                out.append((index, docmod.unreadable(entry.rel, plan.type, docmod.E000,
                                                     "unmerged: the index holds a conflict"),
                            None, None, None, False))
                continue
            oid = entry.oid
            rec = cache.get(oid) if oid is not None and cache else None
            early = self._early.pop(self._prefix + entry.rel, None) if self._early else None
            new = None
            if rec is not None:
                parsed, flags = from_record(rec)
            elif early is not None and early[0] == oid:
                _, parsed, flags = early
                new = to_record(parsed, flags)
            else:
                try:
                    data = self.snapshot.read(Entry(self._prefix + entry.rel, oid, entry.mode)
                                              if self._prefix else entry)
                except OSError as exc:
                    out.append((index, docmod.unreadable(entry.rel, plan.type, docmod.E000,
                                                         f"cannot read file: {exc.strerror or exc}"),
                                oid, None, None, False))
                    continue
                parsed, flags = parse_bytes(data)
                new = to_record(parsed, flags)
                oid = oid or blob_oid(data)
            doc, dated = self._check_parsed(entry, parsed, flags, plan)
            # file dates come from history, not from the blob: never memoized
            out.append((index, doc, oid, new, None if dated else f"{schema_key}\0{entry.rel}\0{oid}", dated))
        return out

    def _check_parsed(self, entry: Entry, parsed: frontmatter.Parsed, flags: int,
                      plan: docmod.Plan) -> tuple[Doc, bool]:
        """The document's findings from what its bytes say; whether file dates were used."""
        dated = False

        def dates() -> tuple[str | None, str | None]:
            nonlocal dated
            dated = self.dated = True
            return self._dates_for(entry.rel)

        if flags & TOO_LARGE:
            return docmod.unreadable(entry.rel, plan.type, docmod.E003,
                                     f"file larger than {MAX_BLOB // (1024 * 1024)} MiB: not parsed"), False
        doc = docmod.analyze(entry.rel, parsed, plan, self.root_name, dates)
        if flags & NOT_UTF8:
            doc.findings.insert(0, Finding(entry.rel, 0, "error", docmod.E002,
                                           "not UTF-8 text (binary or another encoding)"))
        return doc, dated

    def _link_finding(self, entry: Entry, folder: Callable[[str], Folder | None]) -> Finding | None:
        """Symlinks are never followed; one that leaves the root is reported (unless its
        folder's schema excludes it)."""
        if folder(entry.rel) is None:
            return None
        try:
            target = self.snapshot.read(Entry(self._prefix + entry.rel, entry.oid, entry.mode))
        except OSError:
            return None
        text = target.decode("utf-8", "replace")
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(entry.rel), text))
        if text.startswith("/") or joined == ".." or joined.startswith("../"):
            return Finding(entry.rel, 0, "warning", docmod.W230,
                           f"symlink to {text!r} leaves the workspace: skipped")
        return None

    def _cache_dir(self) -> Path | None:
        if not self.use_cache:
            return None
        try:
            return self.snapshot.private()
        except PlantedLink:  # a folder planted under .git/vivary: checked without a cache
            return None

    @cached_property
    def entries(self) -> dict[str, Entry]:
        """Workspace-relative path -> entry (blob oid None where only reading tells)."""
        return {e.rel: e for e in self._entries}

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of one file of this source (KeyError for an unknown path)."""
        entry = self.entries[rel]
        return self.snapshot.read(Entry(self._prefix + rel, entry.oid, entry.mode))

    def state(self) -> CheckState | None:
        """The whole check as a patchable state; None when an analysis used file dates
        (those change with no blob changing)."""
        with _acyclic():
            docs, extra = self.analyzed
            if self.dated:
                return None
            return CheckState.build(self.config_paths(), self.config.strict, self.config_reads,
                                    *state_rows(docs, extra))

    def check(self, paths: Iterable[str] | None = None) -> CheckReport:
        """Every document, or those under ``paths``: in the order the paths were given
        (each document once, at the first path that selects it), walk order within one,
        as vivary-tropo reports them. A fault of the schema (E104) governs every
        document, so it is reported whatever the paths."""
        docs, extra = self.documents
        if paths is None:
            return CheckReport(docs, extra)
        selected = list(paths)
        chosen = _in_selector_order(extra, lambda f: f.path, selected)
        schema = [f for f in extra if f.code == docmod.E104 and f not in chosen]
        return CheckReport(_in_selector_order(docs, lambda d: d.rel, selected), schema + chosen)

    def graph(self) -> Graph:
        return build_graph(self.documents[0], self.root_name)


@contextmanager
def _acyclic() -> Iterator[None]:
    """The cyclic collector paused: a whole check builds many long-lived objects and no
    cycles, which it would rescan again and again (a tenth of a cold check's CPU at 20k
    documents). Nests; restores what it found."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def state_rows(docs: list[Doc], extra: list[Finding]) -> tuple[dict[str, DocRow], dict[str, FindingRow]]:
    """Own analyses as :class:`CheckState` keeps them (refs that can break only)."""
    return ({d.rel: (d.id, [astuple(f) for f in d.findings], [r for r in d.refs if isinstance(r[1], str)])
             for d in docs}, {f.path: astuple(f) for f in extra})


def _analysis_key(cfg: Config, root_name: str) -> str:
    """What a document's analysis depends on besides its path and bytes: the effective
    schema, the root's name (index documents at the root take it) and tropo's own code."""
    text = f"{code_stamp()}\0{root_name}\0{cfg!r}"
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _under(rel: str, selector: str) -> bool:
    return selector in ("", ".") or rel == selector or rel.startswith(selector + "/")


_T = TypeVar("_T")


def _in_selector_order(items: list[_T], rel_of: Callable[[_T], str], selected: list[str]) -> list[_T]:
    ranked = []
    for item in items:
        rank = next((i for i, s in enumerate(selected) if _under(rel_of(item), s)), None)
        if rank is not None:
            ranked.append((rank, item))
    ranked.sort(key=lambda pair: pair[0])  # stable: walk order within one selector
    return [item for _, item in ranked]


def walk_key(rel: str) -> str:
    """os.walk order with sorted names: a folder's files before its subfolders. Each
    folder name is led by \\x01 and the file name by \\x00, so one string compares as
    the list ``[(1, folder), ..., (0, file)]`` would (names never hold those bytes)."""
    folder, _, name = rel.rpartition("/")
    return f"\x01{folder.replace('/', chr(1))}\x00{name}" if folder else f"\x00{name}"


def open_workspace(
    root: Path | None = None, source: Source | None = None, *, use_cache: bool = True
) -> Workspace:
    """The workspace containing ``root`` (default: the current directory) read from
    ``source``. Raises ConfigError or SourceError with a one-line message."""
    from tropo.git.snapshot import open_snapshot

    source = source or Source.worktree()
    start = (root or Path.cwd()).resolve()
    if not start.exists():
        raise ConfigError(f"no such directory: {start}")
    if source.kind == "worktree":
        found = find_root(start)
        if found is None:
            raise ConfigError(f"no {CONFIG_NAME} found walking up from {start}")
        snapshot = open_snapshot(found, source, read_by_tropo)
    else:
        snapshot = open_snapshot(start, source, read_by_tropo)
        commit = snapshot.commit() if source.kind == "rev" else None
        found = root_in(snapshot.top, start, str(commit.tree_id) if commit is not None else None)
        if found is None:
            raise ConfigError(
                f"no {CONFIG_NAME} in {source.describe()} walking up from {start}")
    return Workspace(found, snapshot, use_cache=use_cache)
