"""Snapshots: the files of a workspace as a plain directory, the working tree, the index
or a commit has them, and where a workspace is read from.

A snapshot lists entries (path, blob oid when known, mode) and reads their bytes. In a
git work tree, clean tracked files take their oid from the index without being read, so
a warm check reads only what changed; outside git, the directory is walked; a delta
holds only the files that changed. The git bindings are imported only when a git
snapshot is opened, so front ends can name sources and catch these errors before
deciding whether they need a repository at all (a warm check never loads them).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tropo.git import gitcli

if TYPE_CHECKING:
    import pygit2

LINK = 0o120000
MAX_BLOB = 16 * 1024 * 1024


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




class Entry(NamedTuple):
    """One file of a snapshot (a named tuple: a listing makes one per file, and a
    frozen dataclass cost twice as much to build)."""

    rel: str  # posix path relative to the snapshot's top
    oid: str | None  # blob oid when known without reading the file
    mode: int  # git file mode; LINK for symlinks


Early = Callable[[list["Entry"]], None]  # what a caller does while a listing waits


class Snapshot:
    """A read-only view of files; subclasses say where the bytes come from."""

    def __init__(self, top: Path, source: Source | None = None) -> None:
        self.top = top
        self.source = source or Source.worktree()

    def entries(self, prune: Callable[[str], bool], meanwhile: Early | None = None) -> list[Entry]:
        """Every file ``prune`` keeps. ``meanwhile``, where a listing waits on a slow git
        command, is first handed the entries known without it, to work on in the wait."""
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

    def private(self) -> Path | None:
        """The repository's private folder for caches (``.git/vivary``); None without a
        repository. Raises :class:`tropo.fs.private.PlantedLink` as
        :func:`tropo.git.repo.private_dir` does."""
        repository = self.repo()
        if repository is None:
            return None
        from tropo.git.repo import private_dir

        return private_dir(repository)


class DirSnapshot(Snapshot):
    """A plain directory (no git): walked, symlinks never followed."""

    def entries(self, prune: Callable[[str], bool], meanwhile: Early | None = None) -> list[Entry]:
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
        return read_capped(f"{self.top}/{entry.rel}")

    def read_path(self, rel: str) -> bytes | None:
        path = self.top / rel
        if path.is_symlink() or not path.is_file():
            return None
        return read_capped(path)


def read_capped(path: Path | str) -> bytes:
    """A file's bytes, at most ``MAX_BLOB + 1`` (enough to tell it is too large). Sized
    by fstat first: asking for the cap outright allocates 16 MiB per small file. Plain
    ``os`` calls, no file object: a cold check reads every document this way."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        want = min(os.fstat(fd).st_size, MAX_BLOB) + 1
        data = os.read(fd, want)
        if len(data) == want:  # it grew, or the size lied (a pipe, /proc)
            chunks = [data]
            while want <= MAX_BLOB and (more := os.read(fd, MAX_BLOB + 1 - want)):
                chunks.append(more)
                want += len(more)
            data = b"".join(chunks)
    finally:
        os.close(fd)
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

    def entries(self, prune: Callable[[str], bool], meanwhile: Early | None = None) -> list[Entry]:
        return [e for e in self._changed if not prune(e.rel)]

    def read(self, entry: Entry) -> bytes:
        if entry.oid is None:
            return super().read(entry)
        return self._blobs[entry.oid][: MAX_BLOB + 1]

    def read_path(self, rel: str) -> bytes | None:
        if rel not in self._configs:
            raise LookupError(rel)
        return self._configs[rel]


def _git_records(top: Path, *args: str) -> list[str]:
    try:
        return gitcli.records(top, *args)
    except gitcli.GitError as exc:
        raise SourceError(f"git {args[0]}: {exc}") from exc


Listing = tuple[dict[str, Entry], list[str]]  # stage-0 entries by path, conflicted paths


def _ls_files(top: Path) -> Listing:
    """The index (``GIT_INDEX_FILE`` when git sets it, as for ``commit -a`` in a hook)."""
    entries: dict[str, Entry] = {}
    conflicts: set[str] = set()
    for rec in _git_records(top, "ls-files", "--stage", "-z"):
        meta, _, path = rec.partition("\t")
        mode, oid, stage = meta.split(" ")
        if stage != "0":
            conflicts.add(path)  # listed, so the check can say it is unmerged
            entries.setdefault(path, Entry(path, oid, int(mode, 8)))
        elif mode != "160000":  # a submodule is not a file
            entries[path] = Entry(path, oid, int(mode, 8))
    return entries, sorted(conflicts)


def _ls_tree(top: Path, commit: str) -> Listing:
    entries: dict[str, Entry] = {}
    modes: dict[str, int] = {}  # a tree has a handful of modes and a file each
    for rec in _git_records(top, "ls-tree", "-r", "-z", "--full-tree", commit):
        meta, _, path = rec.partition("\t")
        mode, kind, oid = meta.split(" ")
        if kind == "blob":
            number = modes.get(mode)
            if number is None:
                number = modes[mode] = int(mode, 8)
            entries[path] = Entry(path, oid, number)
    return entries, []


class WorktreeSnapshot(DirSnapshot):
    """A git work tree: the index's blob oids for clean files, corrected by status, so
    only what changed is ever read. ``read`` says which changed files the fingerprint
    reads from disk (the caller's roots: configs and documents)."""

    def __init__(self, repository: pygit2.Repository, read: Callable[[str], bool]) -> None:
        from tropo.git.repo import workdir

        super().__init__(workdir(repository))
        self._repo = repository
        self._read = read
        self._conflicts: list[str] = []

    def entries(self, prune: Callable[[str], bool], meanwhile: Early | None = None) -> list[Entry]:
        """The index corrected by ``git status``, which walks every folder of the work
        tree (0.4-0.7 s at 20k documents): it runs in its own process while the index is
        listed and ``meanwhile`` works on the index's entries (a second core's worth)."""
        with gitcli.Started(self.top, "status", "--porcelain", "-z", "--untracked-files=all",
                            "--no-renames", "--ignore-submodules=all") as status:
            index, self._conflicts = _ls_files(self.top)
            out = {rel: e for rel, e in index.items() if not prune(rel)}
            if meanwhile is not None:
                meanwhile(list(out.values()))
            try:
                said = status.records()
            except gitcli.GitError as exc:
                raise SourceError(f"git status: {exc}") from exc
        for rec in said:
            code, path = rec[:2], rec[3:]
            if code == "??":
                if not prune(path):
                    mode = LINK if os.path.islink(self.top / path) else 0o100644
                    out[path] = Entry(path, None, mode)
            elif code[1] == "D":
                out.pop(path, None)
            elif code[1] in "MT" and path in out:
                mode = LINK if os.path.islink(self.top / path) else out[path].mode
                out[path] = Entry(path, None, mode)
        return list(out.values())

    def fingerprint(self) -> str | None:
        """What git says differs from HEAD, with the bytes of each changed document or
        config only the disk knows (:func:`tropo.git.diff.fingerprint`)."""
        from tropo.git import diff

        try:
            return diff.fingerprint(self.top, diff.worktree(self.top, "."), self._read)
        except gitcli.GitError:
            return None

    def conflicts(self) -> list[str]:
        return self._conflicts

    def commit(self) -> pygit2.Commit | None:
        from tropo.git.repo import head_commit

        return head_commit(self._repo)

    def repo(self) -> pygit2.Repository:
        return self._repo


class IndexSnapshot(Snapshot):
    """What a commit would record: the blobs in the index, or a commit's tree."""

    def __init__(self, top: Path, repository: Callable[[], pygit2.Repository], source: Source,
                 listing: Callable[[], Listing], commit: pygit2.Commit | None,
                 fingerprint: str | None = None, worktree_copies: bool = False,
                 private: Path | None = None) -> None:
        """``repository`` opens the repository whose work tree is ``top``, called only when
        a blob must come from its object database: the git bindings take 60 ms to load,
        and a cold check of HEAD's tree may read every blob from the work tree instead.
        ``worktree_copies``: read a blob from the work tree's file at its path when that
        file holds exactly the blob's bytes (hashed to be sure), as it does for every
        clean file of HEAD's tree: a plain read beats inflating deltas from a pack.
        ``private``: the repository's private folder, when the caller knows it."""
        super().__init__(top, source)
        self._copies = f"{self.top}/" if worktree_copies else None
        self._open = repository
        self._repo: pygit2.Repository | None = None
        self._private = private
        self._listing = listing
        self._commit = commit
        self._loaded: Listing | None = None
        self._fingerprint = fingerprint

    def _all(self) -> Listing:
        if self._loaded is None:
            self._loaded = self._listing()
        return self._loaded

    def fingerprint(self) -> str | None:
        return self._fingerprint

    def entries(self, prune: Callable[[str], bool], meanwhile: Early | None = None) -> list[Entry]:
        return [e for e in self._all()[0].values() if not prune(e.rel)]

    def read(self, entry: Entry) -> bytes:
        assert entry.oid is not None
        if self._copies is not None and entry.mode != LINK:
            found = _worktree_copy(self._copies + entry.rel, entry.oid)
            if found is not None:
                return found
        return _blob(self.repo(), entry.oid)

    def read_path(self, rel: str) -> bytes | None:
        entry = self._all()[0].get(rel)
        if entry is None or entry.mode == LINK:
            return None
        return self.read(entry)

    def conflicts(self) -> list[str]:
        return self._all()[1]

    def commit(self) -> pygit2.Commit | None:
        return self._commit

    def repo(self) -> pygit2.Repository:
        if self._repo is None:
            self._repo = self._open()
        return self._repo

    def private(self) -> Path | None:
        return self._private if self._private is not None else super().private()


def _blob(repository: pygit2.Repository, oid: str) -> bytes:
    import pygit2

    kind, data = repository.odb.read(oid)  # raw bytes: a third cheaper than a Blob object
    assert kind == pygit2.GIT_OBJECT_BLOB
    return data if len(data) <= MAX_BLOB else data[: MAX_BLOB + 1]


def _worktree_copy(path: str, oid: str) -> bytes | None:
    """The bytes of blob ``oid`` when the regular file at ``path`` holds exactly them;
    None when it does not (changed, filtered by an attribute, a symlink or anything but
    a plain file: never followed, never waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BLOB:
            return None
        data = os.read(fd, st.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    digest = hashlib.sha1 if len(oid) == 40 else hashlib.sha256
    found = digest(b"blob %d\0" % len(data), usedforsecurity=False)
    found.update(data)
    return data if found.hexdigest() == oid else None


def open_snapshot(start: Path, source: Source, read: Callable[[str], bool]) -> Snapshot:
    """The snapshot of the repository (or plain directory) containing ``start``; ``read``
    as for :class:`WorktreeSnapshot`."""
    from tropo.git import repo as gitrepo

    repository = gitrepo.discover(start)
    if source.kind == "worktree":
        if repository is None or repository.is_bare:
            return DirSnapshot(start)
        return WorktreeSnapshot(repository, read)
    if repository is None or repository.is_bare:
        what = "--staged" if source.kind == "index" else "--rev"
        raise SourceError(f"{what} needs a git work tree, and {start} is not inside one")
    top = gitrepo.workdir(repository)
    if source.kind == "index":
        trailer = _index_trailer(repository)
        return IndexSnapshot(top, lambda: repository, source, lambda: _ls_files(top),
                             gitrepo.head_commit(repository),
                             "index:" + trailer.hex() if trailer is not None else None)
    assert source.rev is not None
    try:
        commit = gitrepo.resolve_commit(repository, source.rev)
    except gitrepo.RevisionError as exc:
        raise SourceError(str(exc)) from exc
    return IndexSnapshot(top, lambda: repository, source, lambda: _ls_tree(top, str(commit.id)), commit,
                         f"tree:{commit.tree_id}")


def tree_snapshot(top: Path, tree: str, *, worktree_copies: bool = False,
                  private: Path | None = None) -> IndexSnapshot:
    """A tree's files in the repository whose work tree is ``top``, with no commit around
    them (so no file dates from history); ``worktree_copies`` for HEAD's tree, whose
    clean files the work tree holds; ``private`` as :class:`IndexSnapshot` takes it. The
    repository is opened only if a blob must come from it."""
    return IndexSnapshot(top, lambda: _require(top), Source.at(tree), lambda: _ls_tree(top, tree), None,
                         f"tree:{tree}", worktree_copies, private)


def _require(top: Path) -> pygit2.Repository:
    from tropo.git.repo import require

    return require(top)


def read_staged(repository: pygit2.Repository, rel: str, stage: str = "0") -> bytes | None:
    """The bytes the index stages at ``rel``, what the next commit records there (the
    index of ``GIT_INDEX_FILE`` when git sets it); None when it stages no file there.
    In a conflicted merge, ``stage`` 1, 2 and 3 are the merge base's, ours and theirs."""
    from tropo.git.repo import workdir

    top = workdir(repository)
    for rec in _git_records(top, "ls-files", "--stage", "-z", "--", f":(literal){rel}"):
        meta, _, path = rec.partition("\t")
        mode, oid, at = meta.split(" ")
        if path == rel and at == stage and mode != "160000":
            return _blob(repository, oid)
    return None


def _index_trailer(repository: pygit2.Repository) -> bytes | None:
    """The checksum git writes at the end of the index file the commit would use
    (``GIT_INDEX_FILE`` in a hook); None when there is no index yet."""
    path = os.environ.get("GIT_INDEX_FILE") or str(Path(repository.path) / "index")
    try:
        with open(path, "rb") as fh:
            fh.seek(-32, os.SEEK_END)
            return fh.read()
    except OSError:
        return None


def read_file(commit: pygit2.Commit | None, path: str) -> bytes | None:
    """The bytes of ``path`` in ``commit``'s tree as the revision records them, never as
    the working tree has them; None when absent or not a file. Trust roots (allowed
    signers, guard config) are read this way, so that an edit in the working tree, or in
    the environment, cannot grant anything."""
    import pygit2

    if commit is None:
        return None
    try:
        obj = commit.tree[path]
    except KeyError:
        return None
    return obj.data if isinstance(obj, pygit2.Blob) else None
