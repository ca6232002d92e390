"""One document: its derived identity and the findings of checking it against a schema.

Pure functions: the inputs are a path, what its bytes say (:class:`Parsed`) and the
effective schema; nothing here reads files or git.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tropo.check import fields as specs
from tropo.check.config import Config, Schema, excluder
from tropo.check.findings import Finding as Finding
from tropo.check.frontmatter import Parsed
from tropo.check.ids import derive_id

# Codes: upstream vivary-tropo's, plus ours (documented in docs/findings.md).
E000, E001, E002, E003 = "E000", "E001", "E002", "E003"
E101, E102, E103, E104, E130 = "E101", "E102", "E103", "E104", "E130"
W201, W202, W210, W220, W230 = "W201", "W202", "W210", "W220", "W230"


def is_markdown(rel: str) -> bool:
    return rel.endswith((".md", ".markdown"))


@dataclass
class Doc:
    rel: str
    id: str | None  # None when unreadable: it names no node
    type: str | None
    title: str
    fields: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    refs: list[tuple[str, Any, int]] = field(default_factory=list)  # (field, target, line)
    declared: dict[str, Any] = field(default_factory=dict)  # valid declared fields
    noise: list[str] = field(default_factory=list)  # keys that repeat a derived value


def unreadable(rel: str, type_name: str | None, code: str, message: str) -> Doc:
    doc = Doc(rel, None, type_name, "", {})
    doc.findings.append(Finding(rel, 0, "error", code, message))
    return doc


Dates = Callable[[], tuple[str | None, str | None]]
Rule = tuple["specs.Check | None", bool]  # a field's check (None: its spec is unknown), whether it is an edge


@dataclass(frozen=True)
class Plan:
    """What checking a document of one type under one schema asks, worked out once per
    folder rather than per document: the merged field tables, each spec's check."""

    type: str | None
    untyped: bool  # an untyped document the schema refuses (W201)
    noisy: bool  # a field that repeats its derived value is noise (W210)
    required: tuple[str, ...]
    derive: frozenset[str]
    rules: dict[str, Rule]

    @classmethod
    def of(cls, cfg: Config, type_name: str | None) -> Plan:
        required, known = cfg.fields_for(type_name)
        rules = {key: (specs.checker(spec) if specs.is_known(spec) else None, spec in specs.EDGE_SPECS)
                 for key, spec in known.items()}
        return cls(type_name, type_name is None and not cfg.allow_untyped,
                   type_name is not None or not cfg.allow_untyped, tuple(required),
                   frozenset(cfg.derive), rules)


Folder = tuple[Plan, str]  # the plan of a document's type, the memo key's schema part


def folders(schema: Schema, root_name: str, key: Callable[[Config], str]) -> Callable[[str], Folder | None]:
    """What checking a document at a path asks of its folder, worked out once per folder
    (by each process that asks): its schema's plan for the folder's type and ``key`` of
    that schema; None for a path its nested schema excludes. A plan is made once per
    schema and type: 19k folders may hold one document each. Reads nothing: a schema
    reads its every file when it is made."""
    per_dir: dict[str, tuple[Plan, str, Callable[[str], bool] | None]] = {}
    keys: dict[int, str] = {}
    plans: dict[tuple[int, str | None], Plan] = {}
    nested: dict[int, Callable[[str], bool]] = {}

    def folder(rel: str) -> Folder | None:
        rel_dir = rel.rpartition("/")[0]
        known = per_dir.get(rel_dir)
        if known is None:
            cfg = schema.for_dir(rel_dir)
            if id(cfg) not in keys:
                keys[id(cfg)] = key(cfg)
                if cfg is not schema.root:
                    nested[id(cfg)] = excluder(cfg.exclude)
            type_name = cfg.type_for(rel_dir, root_name)
            plan = plans.get((id(cfg), type_name))
            if plan is None:
                plan = plans[id(cfg), type_name] = Plan.of(cfg, type_name)
            known = per_dir[rel_dir] = (plan, keys[id(cfg)], nested.get(id(cfg)))
        plan, schema_key, excluded = known
        return None if excluded is not None and excluded(rel) else (plan, schema_key)

    return folder


def analyze(rel: str, parsed: Parsed, plan: Plan, root_name: str, dates: Dates) -> Doc:
    """Check one document against its type's plan (cross-file checks come later)."""
    doc_id = derive_id(rel, root_name)
    title = parsed.title or doc_id.replace("-", " ").title()
    type_name = plan.type
    doc = Doc(rel, doc_id, type_name, title, parsed.fields)
    add = doc.findings.append
    if parsed.error is not None:
        message, line = parsed.error
        add(Finding(rel, line, "error", E001, message))
        return doc
    if plan.untyped:
        add(Finding(rel, 1, "error", W201,
                    "untyped document (no ancestor folder is a registered type)"))
    fields = parsed.fields
    lines = parsed.key_lines
    for key in plan.required:
        if key not in fields:
            add(Finding(rel, 1, "error", E101,
                        f"missing required field {key!r} for type {type_name!r}"))
        elif fields[key] is None or fields[key] == "":
            add(Finding(rel, lines.get(key, 1), "error", E102, f"required field {key!r} is empty"))
    derived: dict[str, Any] | None = None
    rules = plan.rules
    for key, value in fields.items():
        if key in plan.derive:
            if derived is None:
                derived = {"id": doc_id, "slug": doc_id, "title": title}
            if key in ("created", "updated") and key not in derived:
                derived["created"], derived["updated"] = dates()  # history only when it matters
            if value == derived.get(key) and plan.noisy:
                doc.noise.append(key)
                add(Finding(rel, lines.get(key, 1), "warning", W210,
                            f"field {key!r} equals its derived value (noise)"))
            continue
        rule = rules.get(key)
        if rule is None:
            if type_name is not None:
                add(Finding(rel, lines.get(key, 1), "warning", W202,
                            f"unknown field {key!r} for type {type_name!r}"))
            continue
        check, edge = rule
        if check is None:
            continue  # the schema's fault, reported once on the file that declares it (E104)
        if edge and value is not None:
            line = lines.get(key, 1)
            for target in value if isinstance(value, list) else [value]:
                doc.refs.append((key, target, line))
        why = check(value)
        if why:
            add(Finding(rel, lines.get(key, 1), "error", E103, f"field {key!r}: {why}"))
        else:
            doc.declared[key] = value
    return doc
