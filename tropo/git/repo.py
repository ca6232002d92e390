"""Repository access: the one place that opens git and moves refs.

Every durable fact of a workspace lives in its git repository, so every part of the
toolkit goes through these primitives. Ref writes are compare-and-swap: a lost race
raises :class:`RefRaceError` naming what won, never a silent overwrite.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pygit2

from tropo.git.revspec import AmbiguousRevision as AmbiguousRevision
from tropo.git.revspec import resolve_commit as resolve_commit  # the one resolver of a typed revision
from tropo.git.source import NotARepository as NotARepository
from tropo.git.source import RevisionError as RevisionError

ZERO = "0" * 40


@dataclass
class RefRaceError(Exception):
    """A compare-and-swap on a ref lost: the ref no longer holds what the caller read."""

    name: str
    expected: str | None
    actual: str | None

    def __str__(self) -> str:
        have = self.actual or "nothing"
        want = self.expected or "nothing"
        return f"{self.name} moved: expected {want}, found {have}"


def discover(path: str | os.PathLike[str]) -> pygit2.Repository | None:
    """The repository whose work tree contains ``path``, or None outside any.

    Opened directly (git searches upwards, as discovery does): pygit2 1.21's
    ``discover_repository`` returns None without a reference, so each call outside a
    repository took one from None and a long-lived process aborted once they ran out."""
    try:
        return pygit2.Repository(str(path))
    except pygit2.GitError:
        return None


def require(path: str | os.PathLike[str]) -> pygit2.Repository:
    """Like :func:`discover` but raising :class:`NotARepository`."""
    repo = discover(path)
    if repo is None:
        raise NotARepository(f"not a git repository: {Path(path).resolve()}")
    return repo


def workdir(repo: pygit2.Repository) -> Path:
    """The work tree root (no trailing slash)."""
    if repo.workdir is None:
        raise NotARepository(f"bare repository has no work tree: {repo.path}")
    return Path(repo.workdir).resolve()


def private_dir(repo: pygit2.Repository) -> Path:
    """``.git/vivary``: disposable caches and worktrees, never a second truth."""
    common = Path(repo.path).resolve()
    # A linked worktree's .git/worktrees/<name>; caches belong to the common dir.
    commondir_file = common / "commondir"
    if commondir_file.is_file():
        common = (common / commondir_file.read_text().strip()).resolve()
    return common / "vivary"


def head_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    """HEAD's commit, or None in a repository with no commits yet."""
    if repo.head_is_unborn:
        return None
    obj = repo.head.peel(pygit2.Commit)
    assert isinstance(obj, pygit2.Commit)
    return obj


def read_ref(repo: pygit2.Repository, name: str) -> str | None:
    """The hex oid a direct ref points at, or None when it does not exist."""
    try:
        ref = repo.references[name]
    except KeyError:
        return None
    return str(ref.resolve().target)


def cas_ref(
    repo: pygit2.Repository,
    name: str,
    new: str | pygit2.Oid | None,
    expected: str | None,
    message: str,
) -> None:
    """Point ``name`` at ``new`` only if it still points at ``expected``.

    ``expected=None`` means the ref must not exist yet (creation is git's mutex);
    ``new=None`` deletes it. The ref is locked for the compare and the write, so two
    processes can never both succeed from the same ``expected``.
    """
    try:
        with repo.transaction() as txn:
            txn.lock_ref(name)
            actual = read_ref(repo, name)
            if actual != expected:
                raise RefRaceError(name, expected, actual)
            if new is None:
                txn.remove(name)
            else:
                txn.set_target(name, pygit2.Oid(hex=str(new)), message=message)
    except pygit2.GitError as exc:
        # Another process holds the lock: it is mid-write, so we lost the race.
        if "lock" in str(exc).lower() or "exists" in str(exc).lower():
            raise RefRaceError(name, expected, read_ref(repo, name)) from exc
        raise


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The configured identity, or a neutral one so a fresh machine can still write."""
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("vivary", "vivary@localhost")
