"""Snapshots: the files of a workspace as the working tree, the index or a commit has them.

Each snapshot lists entries (path, blob oid when known, mode) and reads their bytes.
In a git work tree, clean tracked files take their oid from the index without being
read, so a warm check reads only what changed. Outside git, the working tree is walked.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2

from tropo import repo as gitrepo

LINK = 0o120000
MAX_BLOB = 16 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    rel: str  # posix path relative to the snapshot's top
    oid: str | None  # blob oid when known without reading the file
    mode: int  # git file mode; LINK for symlinks


@dataclass(frozen=True)
class Source:
    """Where to read a workspace from: ``worktree`` (default), ``index`` or ``rev``."""

    kind: str
    rev: str | None = None

    @classmethod
    def worktree(cls) -> Source:
        return cls("worktree")

    @classmethod
    def index(cls) -> Source:
        return cls("index")

    @classmethod
    def at(cls, rev: str) -> Source:
        return cls("rev", rev)

    def describe(self) -> str:
        return {"worktree": "the working tree", "index": "the index"}.get(self.kind, f"{self.rev}")


class SourceError(Exception):
    """The source cannot be read (no repository, no commit); exit 2."""


class Snapshot:
    """A read-only view of files; subclasses say where the bytes come from."""

    kind = "worktree"

    def __init__(self, top: Path) -> None:
        self.top = top

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        raise NotImplementedError

    def read(self, entry: Entry) -> bytes:
        raise NotImplementedError

    def read_path(self, rel: str) -> bytes | None:
        raise NotImplementedError

    def conflicts(self) -> list[str]:
        return []

    def commit(self) -> pygit2.Commit | None:
        """The commit whose history dates this snapshot's files."""
        return None

    def repo(self) -> pygit2.Repository | None:
        return None


class DirSnapshot(Snapshot):
    """A plain directory (no git): walked, symlinks never followed."""

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        out: list[Entry] = []
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                with os.scandir(self.top / rel_dir) as it:
                    items = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for item in items:
                rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
                if prune(rel):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(rel)
                elif stat.S_ISLNK(st.st_mode):
                    out.append(Entry(rel, None, LINK))
                elif stat.S_ISREG(st.st_mode):
                    out.append(Entry(rel, None, 0o100644))
        return out

    def read(self, entry: Entry) -> bytes:
        if entry.mode == LINK:
            return os.readlink(self.top / entry.rel).encode("utf-8", "surrogateescape")
        return _read_file(self.top / entry.rel)

    def read_path(self, rel: str) -> bytes | None:
        path = self.top / rel
        if path.is_symlink() or not path.is_file():
            return None
        return _read_file(path)


def _read_file(path: Path) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read(MAX_BLOB + 1)
    return data


class WorktreeSnapshot(DirSnapshot):
    """A git work tree: tracked files from the index, corrected by status."""

    def __init__(self, repository: pygit2.Repository) -> None:
        super().__init__(gitrepo.workdir(repository))
        self._repo = repository

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        index = self._repo.index
        status = self._repo.status(untracked_files="all", ignored=False)
        changed = pygit2.enums.FileStatus.WT_MODIFIED | pygit2.enums.FileStatus.WT_TYPECHANGE
        out: list[Entry] = []
        for e in index:
            flags = status.get(e.path)
            if flags is not None and flags & pygit2.enums.FileStatus.WT_DELETED:
                continue
            if flags is not None and flags & changed:
                mode = LINK if os.path.islink(self.top / e.path) else e.mode
                out.append(Entry(e.path, None, mode))
            else:
                out.append(Entry(e.path, str(e.id), e.mode))
        for path, flags in status.items():
            if flags & pygit2.enums.FileStatus.WT_NEW:
                mode = LINK if os.path.islink(self.top / path) else 0o100644
                out.append(Entry(path, None, mode))
        return [e for e in out if not prune(e.rel)]

    def conflicts(self) -> list[str]:
        c = self._repo.index.conflicts
        if c is None:
            return []
        return sorted({(a or b or t).path for a, b, t in c if (a or b or t) is not None})

    def commit(self) -> pygit2.Commit | None:
        return gitrepo.head_commit(self._repo)

    def repo(self) -> pygit2.Repository:
        return self._repo


class IndexSnapshot(Snapshot):
    """What a commit would record: the blobs in the index (or a commit's tree)."""

    kind = "index"

    def __init__(self, repository: pygit2.Repository, index: pygit2.Index,
                 commit: pygit2.Commit | None) -> None:
        super().__init__(gitrepo.workdir(repository) if not repository.is_bare
                         else Path(repository.path))
        self._repo = repository
        self._index = index
        self._commit = commit
        self._paths: dict[str, Entry] | None = None

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        return [e for e in self._all().values() if not prune(e.rel)]

    def _all(self) -> dict[str, Entry]:
        if self._paths is None:
            self._paths = {e.path: Entry(e.path, str(e.id), e.mode) for e in self._index}
        return self._paths

    def read(self, entry: Entry) -> bytes:
        assert entry.oid is not None
        blob = self._repo[entry.oid]
        assert isinstance(blob, pygit2.Blob)
        return blob.data if blob.size <= MAX_BLOB else blob.data[: MAX_BLOB + 1]

    def read_path(self, rel: str) -> bytes | None:
        entry = self._all().get(rel)
        if entry is None or entry.mode == LINK:
            return None
        return self.read(entry)

    def conflicts(self) -> list[str]:
        c = self._index.conflicts
        if c is None:
            return []
        return sorted({(a or b or t).path for a, b, t in c if (a or b or t) is not None})

    def commit(self) -> pygit2.Commit | None:
        return self._commit

    def repo(self) -> pygit2.Repository:
        return self._repo


def open_snapshot(start: Path, source: Source) -> Snapshot:
    """The snapshot of the repository (or plain directory) containing ``start``."""
    repository = gitrepo.discover(start)
    if source.kind == "worktree":
        if repository is None or repository.is_bare:
            return DirSnapshot(start)
        return WorktreeSnapshot(repository)
    if repository is None:
        what = "--staged" if source.kind == "index" else "--rev"
        raise SourceError(f"{what} needs a git repository, and {start} is not inside one")
    if source.kind == "index":
        return IndexSnapshot(repository, _commit_index(repository), gitrepo.head_commit(repository))
    assert source.rev is not None
    try:
        commit = gitrepo.resolve_commit(repository, source.rev)
    except gitrepo.RevisionError as exc:
        raise SourceError(str(exc)) from exc
    index = pygit2.Index()
    index.read_tree(commit.tree)
    return IndexSnapshot(repository, index, commit)


def _commit_index(repository: pygit2.Repository) -> pygit2.Index:
    """The index the commit will record: git points hooks at a temporary one with
    ``GIT_INDEX_FILE`` for ``commit -a`` and ``commit PATHS``."""
    path = os.environ.get("GIT_INDEX_FILE")
    if path and os.path.isfile(path):
        return pygit2.Index(os.path.abspath(path))
    index: pygit2.Index = repository.index
    return index


def ancestors(rel: str) -> Iterator[str]:
    """``a/b/c`` -> ``a/b``, ``a``, ``""``."""
    while rel:
        rel = rel.rpartition("/")[0]
        yield rel
