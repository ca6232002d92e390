"""The parse cache: what each blob's bytes say, keyed by blob oid under ``.git/vivary/``.

Content-addressed, so an entry is never stale; deleting or corrupting the file only
costs a re-parse. It is never a second truth: ``--no-cache`` gives the same answer.
"""

from __future__ import annotations

import contextlib
import marshal
from pathlib import Path
from typing import Any

from tropo.atomic import write_atomic
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
    return Parsed(fields, lines, title, tuple(error) if error else None), flags  # type: ignore[arg-type]


class ParseCache:
    def __init__(self, directory: Path | None) -> None:
        self._path = directory / f"parse.v{_VERSION}" if directory is not None else None
        self._data: dict[str, Record] = {}
        self._dirty = False
        self._used: set[str] = set()
        if self._path is not None:
            self._data = self._load(self._path)

    @staticmethod
    def _load(path: Path) -> dict[str, Record]:
        try:
            data = marshal.loads(path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, oid: str) -> Record | None:
        rec = self._data.get(oid)
        if rec is not None:
            self._used.add(oid)
        return rec

    def put(self, oid: str, rec: Record) -> None:
        self._data[oid] = rec
        self._used.add(oid)
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
