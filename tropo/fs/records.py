"""Disposable record files under ``.git/vivary/``: marshal dicts written whole-or-nothing.

Every cache of tropo is one of these. Each is keyed by what its records depend on,
including :func:`code_stamp`, so a record is never stale; a deleted or corrupt file only
costs recomputing it. None is ever a second truth: ``--no-cache`` gives the same answer.
"""

from __future__ import annotations

import contextlib
import functools
import marshal
import os
import shutil
from pathlib import Path
from typing import Any

from tropo.fs.atomic import write_atomic

VERSION = 4  # bump when the shape of any record changes


def load(path: Path) -> Any:
    """The record in ``path``, or None when it is missing or unreadable."""
    try:
        return marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def save(path: Path, record: Any) -> None:
    """Write ``record``; an unwritable cache only makes the next run slower."""
    with contextlib.suppress(OSError, ValueError):
        write_atomic(path, marshal.dumps(record), fsync=False)


def drop_other_versions(directory: Path, name: str) -> None:
    """Remove what another version of tropo kept under ``name`` (``name.v3`` and the
    like): nothing here reads it, and nothing else would ever delete it."""
    mine = f"{name}.v{VERSION}"
    with contextlib.suppress(OSError):
        for old in directory.glob(f"{name}.v*"):
            if old.name != mine and old.name[len(name) + 2:].isdigit():
                with contextlib.suppress(OSError):
                    if old.is_dir() and not old.is_symlink():
                        shutil.rmtree(old)
                    else:
                        old.unlink()


class Store:
    """One file of records by key; loaded on first use, saved when it grew."""

    def __init__(self, directory: Path | None, name: str) -> None:
        self._path = directory / f"{name}.v{VERSION}" if directory is not None else None
        self._name = name
        self._loaded: dict[str, Any] | None = None
        self._dirty = False
        self._used: set[str] = set()

    @property
    def _data(self) -> dict[str, Any]:
        if self._loaded is None:
            data = load(self._path) if self._path is not None else None
            self._loaded = data if isinstance(data, dict) else {}
        return self._loaded

    def __bool__(self) -> bool:
        """Whether it holds any record (a first run's is empty: no lookup can hit)."""
        return bool(self._data)

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
        save(self._path, data)
        drop_other_versions(self._path.parent, self._name)


@functools.cache
def code_stamp() -> str:
    """tropo's own code and bundled packs, by size and mtime: editing either drops
    every cached analysis (an installed package never changes under its caches)."""
    here = Path(__file__).parent.parent
    stamps = []
    folders = [here, *(here / layer for layer in ("check", "git", "fs", "governed", "review", "cli"))]
    for folder, suffix in [*((f, ".py") for f in folders), (here / "packs", ".toml")]:
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(suffix))
            for name in names:
                st = os.stat(folder / name)
                stamps.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            return "unknown"
    return ";".join(stamps)


class Shelf:
    """Records too large to share a file: one file each in a folder, named by key,
    and only the ``keep`` most recently written are kept."""

    def __init__(self, directory: Path | None, name: str, keep: int) -> None:
        self._dir = directory / f"{name}.v{VERSION}" if directory is not None else None
        self._name = name
        self._keep = keep

    def get(self, key: str) -> Any:
        return load(self._dir / key) if self._dir is not None else None

    def put(self, key: str, record: Any) -> None:
        if self._dir is None:
            return
        save(self._dir / key, record)
        stale = self.keys("")[self._keep:]
        for name in stale:
            with contextlib.suppress(OSError):
                os.unlink(self._dir / name)
        drop_other_versions(self._dir.parent, self._name)

    def keys(self, prefix: str) -> list[str]:
        """The keys starting with ``prefix``, most recently written first."""
        if self._dir is None:
            return []
        found = []
        with contextlib.suppress(OSError), os.scandir(self._dir) as it:
            for item in it:
                if item.name.startswith(prefix) and not item.name.startswith("."):
                    with contextlib.suppress(OSError):
                        found.append((item.stat().st_mtime_ns, item.name))
        return [name for _, name in sorted(found, reverse=True)]
