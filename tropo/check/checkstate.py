"""The check of a whole workspace as a compact, patchable state.

Each document's own findings depend only on its path, bytes and effective schema; the
rest (broken refs, duplicate ids) on every document's id and refs. A state keeps exactly
that, so replacing the few documents that changed and redoing the cross-file pass gives
the same answer as checking everything again. It is kept in columns (paths, ids, ref
targets) because a warm check loads it whole: flat lists of shared strings load and scan
ten times faster than a tuple per document. Pure: no files, no git.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tropo.check.findings import INFO, Finding, Summary
from tropo.check.graph import Graph, Node, assemble
from tropo.check.ids import upstream_aliases

W220, I221, E130 = "W220", "I221", "E130"

FindingRow = tuple[str, int, str, str, str]  # a Finding's fields
Ref = tuple[str, str, int]  # (field, target id, line)
DocRow = tuple[str | None, list[FindingRow], list[Ref]]  # id, own findings, refs


@dataclass(frozen=True)
class Refs:
    """Every ref of every document: parallel columns, ``doc`` indexing the paths."""

    doc: array  # type: ignore[type-arg]
    field: list[str]
    target: list[str]
    line: array  # type: ignore[type-arg]

    def add(self, doc: int, refs: list[Ref]) -> None:
        """Append one document's refs (names interned: they repeat across documents)."""
        if not refs:
            return
        fields, targets, lines = zip(*refs, strict=True)  # columns at C speed: 195k refs at 20k
        self.doc.extend(array("i", (doc,)) * len(refs))
        self.field.extend(map(sys.intern, fields))
        self.target.extend(map(sys.intern, targets))
        self.line.extend(lines)


@dataclass(frozen=True)
class CheckState:
    """Documents in walk order with their ids, own findings (only where there are
    some) and refs; findings of no document (symlinks); the schema it was made under:
    nested config paths, strictness, and every config file its schema read (None for
    one that was looked for and absent). An id of ``""`` names no node (unreadable)."""

    config_paths: tuple[str, ...]
    strict: bool
    configs: Mapping[str, bytes | None]
    rels: list[str]
    ids: list[str]
    own: Mapping[str, list[FindingRow]]
    refs: Refs
    extra: Mapping[str, FindingRow]

    @classmethod
    def build(cls, config_paths: Iterable[str], strict: bool, configs: Mapping[str, bytes | None],
              docs: Mapping[str, DocRow], extra: Mapping[str, FindingRow]) -> CheckState:
        """From per-document rows, already in walk order."""
        refs = Refs(array("i"), [], [], array("i"))
        for index, (_, _, doc_refs) in enumerate(docs.values()):
            refs.add(index, doc_refs)
        return cls(tuple(config_paths), strict, dict(configs), list(docs),
                   [sys.intern(doc_id or "") for doc_id, _, _ in docs.values()],
                   {rel: own for rel, (_, own, _) in docs.items() if own}, refs, dict(extra))

    def graph(self, type_of: Callable[[str], str | None], root_name: str) -> Graph:
        """The graph :func:`tropo.check.graph.build_graph` makes of these documents,
        without reading one: its nodes carry id, type (``type_of`` a path) and path, and
        no title or fields, which is all ``tropo graph`` and ``tropo blast`` show."""
        nodes: dict[str, Node] = {}
        types: dict[str, str | None] = {}  # by folder: type_of asks the schema
        for rel, doc_id in zip(self.rels, self.ids, strict=True):
            if doc_id and doc_id not in nodes:
                folder = rel.rpartition("/")[0]
                if folder not in types:
                    types[folder] = type_of(rel)
                nodes[doc_id] = Node(doc_id, types[folder], rel, "", {})
        ids = self.ids
        edges = [(ids[doc], field, target)
                 for doc, field, target in zip(self.refs.doc, self.refs.field, self.refs.target, strict=True)
                 if ids[doc]]
        return assemble(nodes, edges, root_name)

    def cross(self, root_name: str) -> dict[int, list[Finding]]:
        """The findings that need the whole workspace, by document index: refs that
        match no id (an id vivary-tropo derived for a document is resolved, and advised
        against), and every id after its first holder in walk order."""
        ids = set(self.ids)
        ids.discard("")
        out: dict[int, list[Finding]] = {}
        refs = self.refs
        unmatched = [k for k, target in enumerate(refs.target) if target not in ids]
        # Built only when some ref matches nothing: a clean workspace never pays for it.
        aliases = upstream_aliases(zip(self.rels, self.ids, strict=True), ids, root_name) if unmatched else {}
        for k in unmatched:
            rel, target, field = self.rels[refs.doc[k]], refs.target[k], refs.field[k]
            now = aliases.get(target)
            out.setdefault(refs.doc[k], []).append(
                Finding(rel, refs.line[k], "warning", W220,
                        f"field {field!r}: ref {target!r} matches no document id")
                if now is None else
                Finding(rel, refs.line[k], INFO, I221,
                        f"field {field!r}: ref {target!r} is the id vivary-tropo derives; "
                        f"resolved to {now!r}, the id to write now"))
        if len(ids) + self.ids.count("") < len(self.ids):  # some id is held twice
            first: dict[str, str] = {}
            for index, (rel, doc_id) in enumerate(zip(self.rels, self.ids, strict=True)):
                if not doc_id:
                    continue
                if doc_id in first:
                    out.setdefault(index, []).append(Finding(
                        rel, 1, "error", E130, f"duplicate id {doc_id!r}: {first[doc_id]} has it already"))
                else:
                    first[doc_id] = rel
        return out

    def summary(self, root_name: str) -> Summary:
        """Every finding in walk order; a document whose only findings are info is clean."""
        cross = self.cross(root_name)
        position = {rel: index for index, rel in enumerate(self.rels)} if self.own else {}
        owning = {position[rel] for rel in self.own}
        findings: list[Finding] = []
        for index in sorted({*cross, *owning}):
            findings.extend(Finding(*row) for row in self.own.get(self.rels[index], ()))
            findings.extend(cross.get(index, ()))
        findings.extend(Finding(*row) for row in self.extra.values())
        flagged = owning | {i for i, found in cross.items() if any(f.level != INFO for f in found)}
        return Summary(len(self.rels), len(self.rels) - len(flagged), findings)

    def patched(self, touched: Iterable[str], docs: Mapping[str, DocRow],
                extra: Mapping[str, FindingRow], walk_key: Callable[[str], str]) -> CheckState:
        """This state with every path in ``touched`` (changed or gone) dropped, except
        where ``docs`` or ``extra`` analyse it anew; kept paths keep their places."""
        dropped = set(touched)
        old_index = {rel: index for index, rel in enumerate(self.rels)}
        rels = [rel for rel in self.rels if rel not in dropped or rel in docs]
        added = [rel for rel in docs if rel not in old_index]
        if added:
            rels = sorted(rels + added, key=walk_key)
        new_index = {rel: index for index, rel in enumerate(rels)}
        ids = [sys.intern(docs[rel][0] or "") if rel in docs else self.ids[old_index[rel]] for rel in rels]
        remap = [-1 if rel in dropped else new_index[rel] for rel in self.rels]
        old = self.refs
        keep = [k for k, doc in enumerate(old.doc) if remap[doc] >= 0]
        refs = Refs(array("i", [remap[old.doc[k]] for k in keep]), [old.field[k] for k in keep],
                    [old.target[k] for k in keep], array("i", [old.line[k] for k in keep]))
        for rel, (_, _, doc_refs) in docs.items():
            refs.add(new_index[rel], doc_refs)
        own = {rel: rows for rel, rows in self.own.items() if rel not in dropped}
        own.update((rel, row[1]) for rel, row in docs.items() if row[1])
        kept_extra = {rel: extra.get(rel, row) for rel, row in self.extra.items()
                      if rel in extra or rel not in dropped}
        if any(rel not in kept_extra for rel in extra):
            kept_extra.update(extra)
            kept_extra = dict(sorted(kept_extra.items(), key=lambda kv: walk_key(kv[0])))
        return CheckState(self.config_paths, self.strict, self.configs, rels, ids, own, refs, kept_extra)

    def to_record(self) -> tuple[Any, ...]:
        r = self.refs
        return (list(self.config_paths), self.strict, dict(self.configs), self.rels, self.ids, dict(self.own),
                r.doc.tobytes(), r.field, r.target, r.line.tobytes(), dict(self.extra))

    @classmethod
    def from_record(cls, rec: Any) -> CheckState | None:
        """The state a record holds; None for anything else (an older or damaged file)."""
        try:
            config_paths, strict, configs, rels, ids, own, doc, field, target, line, extra = rec
            refs = Refs(array("i"), field, target, array("i"))
            refs.doc.frombytes(doc)
            refs.line.frombytes(line)
        except (TypeError, ValueError):
            return None
        columns_agree = len(refs.doc) == len(field) == len(target) == len(refs.line) \
            and len(rels) == len(ids)
        if not (columns_agree and isinstance(own, dict) and isinstance(extra, dict)
                and isinstance(configs, dict)):
            return None
        return cls(tuple(config_paths), bool(strict), configs, rels, ids, own, refs, extra)
