"""What a snapshot is, and the snapshots read without git bindings.

A snapshot lists entries (path, blob oid when known, mode) and reads their bytes. A plain
directory is walked; a delta holds only the files that changed. The snapshots of a git
work tree, its index and its commits live in :mod:`tropo.git.snapshot`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tropo.git.source import Source

if TYPE_CHECKING:
    import pygit2

LINK = 0o120000
MAX_BLOB = 16 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    rel: str  # posix path relative to the snapshot's top
    oid: str | None  # blob oid when known without reading the file
    mode: int  # git file mode; LINK for symlinks


class Snapshot:
    """A read-only view of files; subclasses say where the bytes come from."""

    def __init__(self, top: Path, source: Source | None = None) -> None:
        self.top = top
        self.source = source or Source.worktree()

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        raise NotImplementedError

    def read(self, entry: Entry) -> bytes:
        raise NotImplementedError

    def read_path(self, rel: str) -> bytes | None:
        raise NotImplementedError

    def conflicts(self) -> list[str]:
        return []

    def fingerprint(self) -> str | None:
        """A digest that changes whenever any entry's path, blob or mode may have changed,
        cheaper than listing the entries; None when there is no cheap one."""
        return None

    def commit(self) -> pygit2.Commit | None:
        """The commit whose history dates this snapshot's files."""
        return None

    def repo(self) -> pygit2.Repository | None:
        return None


class DirSnapshot(Snapshot):
    """A plain directory (no git): walked, symlinks never followed."""

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        out: list[Entry] = []
        for _, found in walk(self.top, prune):
            for rel, st in found:
                if stat.S_ISLNK(st.st_mode):
                    out.append(Entry(rel, None, LINK))
                elif stat.S_ISREG(st.st_mode):
                    out.append(Entry(rel, None, 0o100644))
        return out

    def read(self, entry: Entry) -> bytes:
        if entry.mode == LINK:
            return os.readlink(self.top / entry.rel).encode("utf-8", "surrogateescape")
        return read_file(self.top / entry.rel)

    def read_path(self, rel: str) -> bytes | None:
        path = self.top / rel
        if path.is_symlink() or not path.is_file():
            return None
        return read_file(path)


def read_file(path: Path) -> bytes:
    """A file's bytes, at most ``MAX_BLOB + 1`` (enough to tell it is too large). Sized
    by fstat first: asking for the cap outright allocates 16 MiB per small file."""
    with open(path, "rb", buffering=0) as fh:
        want = min(os.fstat(fh.fileno()).st_size, MAX_BLOB) + 1
        data = fh.read(want) or b""
        while len(data) < MAX_BLOB + 1 and (more := fh.read(MAX_BLOB + 1 - len(data))):
            data += more  # it grew, or the size lied (a pipe, /proc)
    return data


def walk(top: Path, prune: Callable[[str], bool]) -> Iterator[tuple[str, list[tuple[str, os.stat_result]]]]:
    """Each folder under ``top``, depth first with names sorted, and its entries (path
    relative to ``top``, lstat); pruned paths are left out and symlinks never followed."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(top / rel_dir) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        found = []
        for item in items:
            rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
            if prune(rel):
                continue
            try:
                found.append((rel, item.stat(follow_symlinks=False)))
            except OSError:
                continue
        yield rel_dir, found
        stack.extend(reversed([rel for rel, st in found if stat.S_ISDIR(st.st_mode)]))


class DeltaSnapshot(DirSnapshot):
    """Only the files that differ from a tree whose check is known: their bytes from
    blobs read beforehand or, where only the disk tells, from the working tree; the
    configs as that tree's check read them. Asking for any other config is a
    :class:`LookupError`: the caller cannot patch that state and checks everything."""

    def __init__(self, top: Path, changed: list[Entry], blobs: Mapping[str, bytes],
                 configs: Mapping[str, bytes | None]) -> None:
        super().__init__(top)
        self._changed = changed
        self._blobs = blobs
        self._configs = configs

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        return [e for e in self._changed if not prune(e.rel)]

    def read(self, entry: Entry) -> bytes:
        if entry.oid is None:
            return super().read(entry)
        return self._blobs[entry.oid][: MAX_BLOB + 1]

    def read_path(self, rel: str) -> bytes | None:
        if rel not in self._configs:
            raise LookupError(rel)
        return self._configs[rel]
