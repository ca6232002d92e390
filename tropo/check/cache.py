"""Cached forms of parses and analyses, for the record files of :mod:`tropo.fs.records`.

The parse cache keys what a blob's bytes say by its oid; the memo keys a document's
whole analysis by what it depends on (blob oid, path, effective schema), so a check that
cannot be answered whole re-checks only the documents that changed.
"""

from __future__ import annotations

from typing import Any

from tropo.check.document import Doc, Finding
from tropo.check.frontmatter import Parsed

# Cached form: (fields, key_lines, title, error, flags), marshal-friendly.
Record = tuple[dict[str, Any], dict[str, int], str | None, tuple[str, int] | None, int]
NOT_UTF8 = 1
TOO_LARGE = 2


def to_record(parsed: Parsed, flags: int) -> Record:
    return (parsed.fields, parsed.key_lines, parsed.title, parsed.error, flags)


def from_record(rec: Record) -> tuple[Parsed, int]:
    fields, lines, title, error, flags = rec
    return Parsed(fields, lines, title, (str(error[0]), int(error[1])) if error else None), flags


def doc_record(doc: Doc) -> tuple[Any, ...]:
    """A checked document (before cross-file checks) in marshal-friendly form."""
    return (doc.rel, doc.id, doc.type, doc.title, doc.fields,
            [(f.path, f.line, f.level, f.code, f.message) for f in doc.findings],
            doc.refs, doc.declared, doc.noise)


def doc_from_record(rec: tuple[Any, ...]) -> Doc:
    rel, doc_id, type_name, title, fields, findings, refs, declared, noise = rec
    return Doc(rel, doc_id, type_name, title, fields, [Finding(*f) for f in findings],
               refs, declared, noise)
