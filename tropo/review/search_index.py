"""The body search index: per-blob words and text in SQLite under ``.git/vivary/``.

Keyed by blob oid, so an entry never goes stale and only blobs not seen before are read
and tokenised. A query asks SQLite for the postings of its terms and for the bodies
holding its phrase, instead of re-reading the workspace. Deleting the file only costs a
rebuild; an index that cannot be opened or written, or that another process is writing,
degrades at once to an in-memory one.
"""

from __future__ import annotations

import contextlib
import marshal
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tropo.check.frontmatter import split
from tropo.review.search import word_counts

_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (id INTEGER PRIMARY KEY, oid TEXT UNIQUE NOT NULL,
                                  lowered TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bodies (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (key TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS postings (term TEXT NOT NULL, blob INTEGER NOT NULL, n INTEGER NOT NULL,
                                     PRIMARY KEY (term, blob)) WITHOUT ROWID;
"""


def body_of(data: bytes) -> str:
    """The text after the frontmatter, newlines normalised as a text-mode read sees them."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return split(text)[1]


class BodyIndex:
    """A :class:`tropo.review.search.BodySource` over blob oids, restricted to ``live`` ones."""

    def __init__(self, directory: Path | None) -> None:
        self._db = _connect(directory)
        self._ids: dict[str, int] = {}
        self._live: dict[int, str] = {}

    def close(self) -> None:
        self._db.close()

    def sync(self, live: Iterable[str], read: Callable[[str], bytes]) -> int:
        """Make every oid in ``live`` searchable, reading only unknown ones; the count read.
        An index that cannot be written (read-only, or another process holds its write
        lock) is replaced by one in memory for this run, without waiting."""
        wanted = set(live)
        try:
            return self._sync(wanted, read)
        except sqlite3.Error:
            self._db.close()
            self._db = _connect(None)
            return self._sync(wanted, read)

    def _sync(self, wanted: set[str], read: Callable[[str], bytes]) -> int:
        known = dict(self._db.execute("SELECT oid, id FROM blobs"))
        missing = sorted(wanted - known.keys())
        with self._db:
            for oid in missing:
                body = body_of(read(oid))
                lowered = body.lower()
                cur = self._db.execute("INSERT OR IGNORE INTO blobs (oid, lowered) VALUES (?, ?)",
                                       (oid, lowered))
                if not cur.rowcount:  # another process indexed it meanwhile
                    known[oid] = self._db.execute("SELECT id FROM blobs WHERE oid = ?", (oid,)).fetchone()[0]
                    continue
                rowid = int(cur.lastrowid or 0)
                known[oid] = rowid
                self._db.execute("INSERT INTO bodies (id, body) VALUES (?, ?)", (rowid, body))
                self._db.executemany("INSERT INTO postings VALUES (?, ?, ?)",
                                     ((t, rowid, n) for t, n in word_counts(lowered).items()))
            if len(known) > 2 * len(wanted) + 1000:
                self._prune(set(known) - wanted, known)
        self._ids = {oid: known[oid] for oid in wanted}
        self._live = {i: oid for oid, i in self._ids.items()}
        return len(missing)

    def _prune(self, stale: set[str], known: dict[str, int]) -> None:
        ids = [(known.pop(oid),) for oid in stale]
        self._db.executemany("DELETE FROM postings WHERE blob = ?", ids)
        self._db.executemany("DELETE FROM bodies WHERE id = ?", ids)
        self._db.executemany("DELETE FROM blobs WHERE id = ?", ids)

    def load_records(self, key: str) -> list[tuple[Any, ...]] | None:
        """The search records saved for a workspace fingerprint, if any."""
        try:
            row = self._db.execute("SELECT data FROM records WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:  # busy or unreadable: build the records this run
            return None
        if row is None:
            return None
        try:
            data = marshal.loads(row[0])
        except (EOFError, ValueError, TypeError):
            return None
        return data if isinstance(data, list) else None

    def save_records(self, key: str, rows: list[tuple[Any, ...]]) -> None:
        """Remember the records of one fingerprint (only the latest few are kept)."""
        with contextlib.suppress(sqlite3.Error), self._db:
            self._db.execute("INSERT OR REPLACE INTO records VALUES (?, ?)", (key, marshal.dumps(rows)))
            self._db.execute("DELETE FROM records WHERE rowid NOT IN "
                             "(SELECT rowid FROM records ORDER BY rowid DESC LIMIT 4)")

    def phrase_keys(self, phrase: str) -> set[str]:
        rows = self._db.execute("SELECT id FROM blobs WHERE instr(lowered, ?) > 0", (phrase,))
        return {self._live[i] for (i,) in rows if i in self._live}

    def term_counts(self, terms: Sequence[str]) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for term in dict.fromkeys(terms):
            for blob, n in self._db.execute("SELECT blob, n FROM postings WHERE term = ?", (term,)):
                oid = self._live.get(blob)
                if oid is not None:
                    out.setdefault(oid, {})[term] = n
        return out

    def body(self, key: str) -> str:
        row = self._db.execute("SELECT body FROM bodies WHERE id = ?", (self._ids[key],)).fetchone()
        return str(row[0]) if row else ""


def _connect(directory: Path | None) -> sqlite3.Connection:
    if directory is not None:
        with contextlib.suppress(OSError, sqlite3.Error):
            directory.mkdir(parents=True, exist_ok=True)
            # timeout=0: a query never waits for another process's write lock (the
            # default 5 s, paid once per write, stalled `tropo query` ~10 s); a locked
            # index is busy now, so this run falls back to memory at once instead.
            db = sqlite3.connect(directory / f"search.v{_VERSION}.sqlite", timeout=0)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
                return db
            except sqlite3.Error:  # corrupt or unwritable: rebuild in memory this time
                db.close()
    db = sqlite3.connect(":memory:")
    db.executescript(_SCHEMA)
    return db
