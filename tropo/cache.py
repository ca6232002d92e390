"""The parse cache: what each blob's bytes say, keyed by blob oid under ``.git/vivary/``.

Content-addressed, so an entry is never stale; deleting or corrupting the file only
costs a re-parse. It is never a second truth: ``--no-cache`` gives the same answer.
A second file of the same kind memoizes whole per-document analyses, keyed by what
they depend on (blob oid, path, effective schema), so a warm check re-checks only the
documents that changed.
"""

from __future__ import annotations

import contextlib
import marshal
from pathlib import Path
from typing import Any

from tropo.atomic import write_atomic
from tropo.document import Doc, Finding
from tropo.frontmatter import Parsed

_VERSION = 3  # bump when what a parse yields changes

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


class ParseCache:
    """One marshal file of records by key; loaded on first use, saved when it grew."""

    def __init__(self, directory: Path | None, name: str = "parse") -> None:
        self._path = directory / f"{name}.v{_VERSION}" if directory is not None else None
        self._loaded: dict[str, Any] | None = None
        self._dirty = False
        self._used: set[str] = set()

    @property
    def _data(self) -> dict[str, Any]:
        if self._loaded is None:
            self._loaded = self._load(self._path) if self._path is not None else {}
        return self._loaded

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            data = marshal.loads(path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Any:
        rec = self._data.get(key)
        if rec is not None:
            self._used.add(key)
        return rec

    def put(self, key: str, rec: Any) -> None:
        self._data[key] = rec
        self._used.add(key)
        self._dirty = True

    def save(self) -> None:
        """Persist new entries; keep the old ones only while the file stays small."""
        if self._path is None or not self._dirty:
            return
        data = self._data
        if len(data) > 2 * len(self._used) + 1000:
            data = {k: v for k, v in data.items() if k in self._used}
        with contextlib.suppress(OSError, ValueError):  # unwritable: only slower next time
            write_atomic(self._path, marshal.dumps(data))
