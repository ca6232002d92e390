"""Snapshots: the files of a workspace as the working tree, the index or a commit has them.

Each snapshot lists entries (path, blob oid when known, mode) and reads their bytes.
In a git work tree, clean tracked files take their oid from the index without being
read, so a warm check reads only what changed. Outside git, the working tree is walked.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pygit2

from tropo.check.roots import read_by_tropo
from tropo.git import gitcli, gitdelta
from tropo.git import repo as gitrepo
from tropo.git.files import LINK, MAX_BLOB, DirSnapshot, Entry, Snapshot
from tropo.git.source import Source as Source
from tropo.git.source import SourceError as SourceError


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
    for rec in _git_records(top, "ls-tree", "-r", "-z", "--full-tree", commit):
        meta, _, path = rec.partition("\t")
        mode, kind, oid = meta.split(" ")
        if kind == "blob":
            entries[path] = Entry(path, oid, int(mode, 8))
    return entries, []


class WorktreeSnapshot(DirSnapshot):
    """A git work tree: the index's blob oids for clean files, corrected by status, so
    only what changed is ever read."""

    def __init__(self, repository: pygit2.Repository) -> None:
        super().__init__(gitrepo.workdir(repository))
        self._repo = repository
        self._conflicts: list[str] = []

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        index, self._conflicts = _ls_files(self.top)
        out = dict(index)
        for rec in _git_records(self.top, "status", "--porcelain", "-z", "--untracked-files=all",
                                "--no-renames", "--ignore-submodules=all"):
            code, path = rec[:2], rec[3:]
            if code == "??":
                mode = LINK if os.path.islink(self.top / path) else 0o100644
                out[path] = Entry(path, None, mode)
            elif code[1] == "D":
                out.pop(path, None)
            elif code[1] in "MT" and path in out:
                mode = LINK if os.path.islink(self.top / path) else out[path].mode
                out[path] = Entry(path, None, mode)
        return [e for e in out.values() if not prune(e.rel)]

    def fingerprint(self) -> str | None:
        """What git says differs from HEAD, with the bytes of each changed document or
        config only the disk knows (:func:`tropo.git.gitdelta.fingerprint`)."""
        try:
            return gitdelta.fingerprint(self.top, gitdelta.worktree(self.top, "."), read_by_tropo)
        except gitcli.GitError:
            return None

    def conflicts(self) -> list[str]:
        return self._conflicts

    def commit(self) -> pygit2.Commit | None:
        return gitrepo.head_commit(self._repo)

    def repo(self) -> pygit2.Repository:
        return self._repo


class IndexSnapshot(Snapshot):
    """What a commit would record: the blobs in the index, or a commit's tree."""

    def __init__(self, repository: pygit2.Repository, source: Source, listing: Callable[[], Listing],
                 commit: pygit2.Commit | None, fingerprint: str | None = None) -> None:
        super().__init__(gitrepo.workdir(repository), source)
        self._repo = repository
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

    def entries(self, prune: Callable[[str], bool]) -> list[Entry]:
        return [e for e in self._all()[0].values() if not prune(e.rel)]

    def read(self, entry: Entry) -> bytes:
        assert entry.oid is not None
        return _blob(self._repo, entry.oid)

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
        return self._repo


def _blob(repository: pygit2.Repository, oid: str) -> bytes:
    blob = repository[oid]
    assert isinstance(blob, pygit2.Blob)
    return blob.data if blob.size <= MAX_BLOB else blob.data[: MAX_BLOB + 1]


def open_snapshot(start: Path, source: Source) -> Snapshot:
    """The snapshot of the repository (or plain directory) containing ``start``."""
    repository = gitrepo.discover(start)
    if source.kind == "worktree":
        if repository is None or repository.is_bare:
            return DirSnapshot(start)
        return WorktreeSnapshot(repository)
    if repository is None or repository.is_bare:
        what = "--staged" if source.kind == "index" else "--rev"
        raise SourceError(f"{what} needs a git work tree, and {start} is not inside one")
    top = gitrepo.workdir(repository)
    if source.kind == "index":
        trailer = _index_trailer(repository)
        return IndexSnapshot(repository, source, lambda: _ls_files(top), gitrepo.head_commit(repository),
                             "index:" + trailer.hex() if trailer is not None else None)
    assert source.rev is not None
    try:
        commit = gitrepo.resolve_commit(repository, source.rev)
    except gitrepo.RevisionError as exc:
        raise SourceError(str(exc)) from exc
    return IndexSnapshot(repository, source, lambda: _ls_tree(top, str(commit.id)), commit,
                         f"tree:{commit.tree_id}")


def tree_snapshot(repository: pygit2.Repository, tree: str) -> IndexSnapshot:
    """A tree's files with no commit around them (so no file dates from history)."""
    top = gitrepo.workdir(repository)
    return IndexSnapshot(repository, Source.at(tree), lambda: _ls_tree(top, tree), None, f"tree:{tree}")


def read_staged(repository: pygit2.Repository, rel: str) -> bytes | None:
    """The bytes the index stages at ``rel``, what the next commit records there (the
    index of ``GIT_INDEX_FILE`` when git sets it); None when it stages no file there."""
    top = gitrepo.workdir(repository)
    for rec in _git_records(top, "ls-files", "--stage", "-z", "--", f":(literal){rel}"):
        meta, _, path = rec.partition("\t")
        mode, oid, stage = meta.split(" ")
        if path == rel and stage == "0" and mode != "160000":
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
