"""Cached forms of parses and analyses, for the record files of :mod:`tropo.fs.records`.

The parse cache keys what a blob's bytes say by its oid; the memo keys a document's
whole analysis by what it depends on (blob oid, path, effective schema), so a check that
cannot be answered whole re-checks only the documents that changed.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tropo.check import frontmatter
from tropo.check.document import Doc, Finding
from tropo.check.frontmatter import Parsed
from tropo.fs.records import Store
from tropo.git.snapshot import MAX_BLOB

# Cached form: (fields, key_lines, title, error, flags), marshal-friendly.
Record = tuple[dict[str, Any], dict[str, int], str | None, tuple[str, int] | None, int]
NOT_UTF8 = 1
TOO_LARGE = 2
# A document read and checked: (slot, document, blob oid, a parse record to keep, memo
# key (None: not to keep), whether file dates were used)
Fresh = tuple[int, Doc, "str | None", "Record | None", "str | None", bool]


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


def parse_bytes(data: bytes) -> tuple[frontmatter.Parsed, int]:
    """What a file's bytes say, and the flags of how they were read (above)."""
    flags = 0
    if len(data) > MAX_BLOB:
        return frontmatter.Parsed({}, {}, None, None), TOO_LARGE
    try:
        text = data.decode("utf-8")
        if b"\x00" in data:  # U+0000 and nothing else: quicker to find in the bytes
            flags |= NOT_UTF8
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        flags |= NOT_UTF8
    return frontmatter.parse(text), flags


def blob_oid(data: bytes) -> str:
    """The oid git gives these bytes as a blob (what the parse cache is keyed by)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def keep(found: list[Fresh], cache: Store, memo: Store) -> None:
    """Record what a check found for later runs, and save the two caches."""
    for _, doc, oid, rec, memo_key, _ in found:
        if rec is not None and oid is not None:
            cache.put(oid, rec)
        if memo_key is not None:
            memo.put(memo_key, doc_record(doc))
    cache.save()
    memo.save()


def sent(found: list[Fresh]) -> list[tuple[Any, ...]]:
    return [(i, doc_record(doc), *rest) for i, doc, *rest in found]


def received(sent: list[tuple[Any, ...]]) -> list[Fresh]:
    return [(i, doc_from_record(rec), oid, new, key, dated) for i, rec, oid, new, key, dated in sent]
