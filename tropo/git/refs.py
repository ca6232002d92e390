"""Refs: read, moved by compare-and-swap, locked, listed with their tips, and compared.

Every durable fact of a workspace hangs off a ref, so every ref question is answered
here, once. Ref writes are compare-and-swap: a lost race raises :class:`RefRaceError`
naming what won, never a silent overwrite.

A writer killed between creating git's ``<ref>.lock`` and renaming it leaves that lock
behind, and every later update of the ref then fails as if another writer were busy,
forever. Writers that hold an OS lock (flock: the kernel drops it when the process dies)
while they update a ref (:func:`ref_writer`) know that a ``<ref>.lock`` they find is
stale, and remove it.
"""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pygit2

from tropo.fs.private import private_folder
from tropo.git import gitcli
from tropo.git.repo import common_dir

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


def create_ref(repo: pygit2.Repository, name: str, oid: str, message: str) -> bool:
    """Create ``name`` at ``oid`` only if it does not exist yet (git's mutex); False if
    it already exists."""
    try:
        cas_ref(repo, name, oid, None, message)
    except RefRaceError:
        return False
    return True


@contextmanager
def ref_writer(repo: pygit2.Repository, name: str) -> Iterator[None]:
    """Be the only cooperating writer of ref ``name`` for the duration; a git lock left
    by a dead cooperating writer is removed on entry. Writers that do not cooperate
    (plain git) still meet git's own lock and fail cleanly, as before."""
    common = common_dir(repo)
    mutex = private_folder(common, "reflocks", create=True) / hashlib.sha256(name.encode()).hexdigest()[:32]
    with open(mutex, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            (common / f"{name}.lock").unlink(missing_ok=True)
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ref_names(repo: pygit2.Repository, prefix: str) -> list[str]:
    """The full names of the refs that start with ``prefix``, sorted."""
    return sorted(name for name in repo.references if name.startswith(prefix))


def ref_targets(repo: pygit2.Repository, prefix: str) -> dict[str, str]:
    """Each ref under ``prefix`` with the object it points at: one pass over the refs and
    no object read, the cheap way for a watcher to see what moved."""
    return {ref.name: str(ref.target) for ref in repo.references.iterator()
            if ref.name.startswith(prefix) and isinstance(ref.target, pygit2.Oid)}


def ref_tips(repo: pygit2.Repository, prefix: str) -> dict[str, tuple[str, int]]:
    """Each ref under ``prefix`` with the commit it points at and that commit's time
    (seconds since the epoch), to order chains by activity without reading them."""
    out: dict[str, tuple[str, int]] = {}
    for name, target in ref_targets(repo, prefix).items():
        found = repo[target]
        if found.type == pygit2.enums.ObjectType.COMMIT:
            out[name] = (target, found.peel(pygit2.Commit).commit_time)
    return out


@dataclass(frozen=True)
class BranchTip:
    name: str  # short, as ``claim/x``
    oid: str
    time: int  # committer time of the tip


def branches(repo: pygit2.Repository, prefix: str) -> list[BranchTip]:
    """Local branches under ``prefix`` (e.g. ``claim/``) with their tips, short names."""
    return [BranchTip(name.removeprefix("refs/heads/"), oid, time)
            for name, (oid, time) in sorted(ref_tips(repo, f"refs/heads/{prefix}").items())]


def is_ancestor(repo: pygit2.Repository, ancestor: str, descendant: str) -> bool:
    """True when ``ancestor`` is ``descendant`` or reachable from it (a merged branch)."""
    if ancestor == descendant:
        return True
    try:
        return bool(repo.descendant_of(pygit2.Oid(hex=descendant), pygit2.Oid(hex=ancestor)))
    except (KeyError, ValueError, pygit2.GitError):
        return False


def merge_base(repo: pygit2.Repository, a: str, b: str) -> str | None:
    """The best common ancestor of two commits (None: their histories are unrelated)."""
    found = repo.merge_base(pygit2.Oid(hex=a), pygit2.Oid(hex=b))
    return None if found is None else str(found)


def forget_log(repo: pygit2.Repository, name: str) -> None:
    """Drop ``name``'s reflog, so a rewind made on purpose (and said so) does not read as
    a rewrite to a check that compares the ref with its earlier values."""
    gitcli.run(common_dir(repo), "reflog", "expire", "--expire=now", "--expire-unreachable=now", name)
