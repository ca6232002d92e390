"""What differs from a commit, as git itself computes it.

A check of a large workspace should cost what changed, not what exists. git keeps the
comparison cheap (the index caches file stats and tree hashes), so these functions
ask it for the few paths that differ from HEAD, or between two trees, and nothing else.
Paths are relative to the repository's top; the pathspec limits git to the workspace.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tropo.git import gitcli

LINK = 0o120000
_GITLINK = 0o160000  # a submodule is not a file


@dataclass(frozen=True)
class Change:
    """One path whose content differs: its new blob, or None when only the file on
    disk tells (modified or untracked in the working tree); mode 0 when it is gone."""

    rel: str
    oid: str | None
    mode: int

    @property
    def gone(self) -> bool:
        return self.mode == 0


@dataclass(frozen=True)
class Delta:
    """A source as HEAD plus changes. ``head`` is None before the first commit;
    ``conflicted`` when the index holds an unmerged path."""

    head: str | None
    changes: tuple[Change, ...]
    conflicted: bool


def worktree(top: Path, pathspec: str) -> Delta:
    """The working tree against HEAD: one ``git status``, which compares both the index
    with HEAD and the files with the index, and lists untracked files."""
    return worktree_delta(top, start_worktree(top, pathspec))


def start_worktree(top: Path, pathspec: str) -> gitcli.Started:
    """:func:`worktree`'s ``git status`` started, for :func:`worktree_delta` to read when
    this process has done something else meanwhile (``with`` it: it is always reaped)."""
    return gitcli.Started(top, "status", "--porcelain=v2", "-z", "--branch", "--no-renames",
                          "--untracked-files=all", "--ignore-submodules=all", "--", pathspec)


def worktree_delta(top: Path, started: gitcli.Started) -> Delta:
    """The delta a :func:`start_worktree` command says, once it ends."""
    head: str | None = None
    changes: dict[str, Change] = {}
    conflicted = False
    for rec in started.records():
        kind = rec[0]
        if kind == "#":
            if rec.startswith("# branch.oid "):
                oid = rec[len("# branch.oid "):]
                head = None if oid == "(initial)" else oid
        elif kind == "1":
            _, xy, _, _, m_index, m_work, _, h_index, path = rec.split(" ", 8)
            changes[path] = _tracked_change(path, xy, int(m_index, 8), int(m_work, 8), h_index)
        elif kind == "?":
            path = rec[2:]
            changes[path] = Change(path, None, LINK if os.path.islink(top / path) else 0o100644)
        elif kind == "u":
            conflicted = True
    return Delta(head, tuple(changes.values()), conflicted)


def _tracked_change(path: str, xy: str, m_index: int, m_work: int, h_index: str) -> Change:
    staged, unstaged = xy[0], xy[1]
    if unstaged == "D" or (unstaged == "." and staged == "D") or m_work == _GITLINK:
        return Change(path, None, 0)
    if unstaged != ".":
        return Change(path, None, m_work)  # the bytes on disk, whatever the index says
    return Change(path, h_index, m_index)


def index(top: Path, pathspec: str) -> Delta:
    """The index against HEAD (``GIT_INDEX_FILE`` when git sets it, as in a hook)."""
    head = gitcli.run(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).strip()
    if not head:
        return Delta(None, (), False)
    changes, conflicted = _raw(gitcli.records(
        top, "diff-index", "--cached", "-z", "--no-renames", "--no-relative",
        "--ignore-submodules=all", head, "--", pathspec))
    return Delta(head, changes, conflicted)


def between(top: Path, old: str, new: str, pathspec: str) -> tuple[Change, ...]:
    """What changed from tree (or commit) ``old`` to ``new``."""
    changes, _ = _raw(gitcli.records(top, "diff-tree", "-r", "-z", "--no-renames", "--no-relative",
                                     old, new, "--", pathspec))
    return changes


def tree_of(top: Path, commit: str) -> str:
    """The tree a revision names (a commit's, or a tree itself), as ``git rev-parse
    --verify REV^{tree}`` answers. A process that has the git bindings loaded already
    (``tropo diff`` reads its documents with them) asks them, the name spelled as every
    reader of a typed revision spells it (:func:`tropo.git.revspec.spelled`): a ``git``
    process there cost one per side for nothing. Otherwise git answers: a warm ``tropo
    check`` that patches HEAD's state never loads the bindings."""
    if "pygit2" not in sys.modules:
        return gitcli.records(top, "rev-parse", "--verify", f"{commit}^{{tree}}")[0].strip()
    import pygit2

    from tropo.git.repo import require
    from tropo.git.revspec import spelled

    try:
        repository = require(top)
        return str(repository.revparse_single(spelled(repository, commit)).peel(pygit2.Tree).id)
    except (KeyError, ValueError, pygit2.GitError, gitcli.NotARepository) as exc:
        raise gitcli.GitError(f"{commit!r} names no tree here") from exc


def head_tree(top: Path) -> tuple[str, str] | None:
    """HEAD's commit and its tree; None before the first commit."""
    out = gitcli.call(top, "rev-parse", "HEAD^{commit}", "HEAD^{tree}", "--")
    found = out.stdout.split()
    return (found[0], found[1]) if out.returncode == 0 and len(found) == 3 else None


def blobs_at(top: Path, tree: str, paths: Iterable[str]) -> list[Change]:
    """The files (blobs: symlinks too) ``tree`` holds at exactly ``paths``, repository-
    relative, read in process. A folder is none: ``git ls-tree`` listed every file in
    one when another of the paths reached inside it. The git bindings load here, not
    with this module: a warm ``tropo check`` reads its deltas without them."""
    import pygit2

    from tropo.git.repo import NotARepository, require

    try:
        root = require(top)[tree].peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError, NotARepository) as exc:
        raise gitcli.GitError(f"{tree!r} names no tree here") from exc
    found = []
    for path in paths:
        try:
            entry = root[path]
        except KeyError:
            continue
        if entry.type_str == "blob":
            found.append(Change(path, str(entry.id), entry.filemode))
    return found


def _raw(records: list[str]) -> tuple[tuple[Change, ...], bool]:
    """``--raw -z`` records: ``:old_mode new_mode old_oid new_oid status`` then the path."""
    changes: list[Change] = []
    conflicted = False
    for meta, path in zip(records[::2], records[1::2], strict=True):
        _, new_mode, _, new_oid, status = meta[1:].split(" ")
        if status == "U":
            conflicted = True
        elif status == "D" or int(new_mode, 8) == _GITLINK:
            changes.append(Change(path, None, 0))
        else:
            changes.append(Change(path, new_oid, int(new_mode, 8)))
    return tuple(changes), conflicted


def fingerprint(top: Path, delta: Delta, read: Callable[[str], bool]) -> str | None:
    """A digest naming the content a delta describes: HEAD, each changed path with its
    new blob and, for files only the disk knows that ``read`` selects, their bytes. None
    when nothing names it: no commit yet, a conflict, a file vanishing while read."""
    if delta.head is None or delta.conflicted:
        return None
    h = hashlib.blake2b(delta.head.encode(), digest_size=20)
    for change in sorted(delta.changes, key=lambda c: c.rel):
        h.update(f"\0{change.rel}\0{change.mode}\0{change.oid}".encode("utf-8", "surrogateescape"))
        if change.oid is None and not change.gone and read(change.rel):
            try:
                h.update(_disk_digest(top / change.rel, change.mode))
            except OSError:
                return None
    return h.hexdigest()


def _disk_digest(path: Path, mode: int) -> bytes:
    if mode == LINK:
        return os.fsencode(os.readlink(path))
    h = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.digest()
