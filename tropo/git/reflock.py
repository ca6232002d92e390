"""Recovering refs from writers that died mid-update. git's own `<ref>.lock` is left
behind when a process is killed between creating it and renaming it, and every later
update of that ref then fails as if another writer were busy, forever. Writers that
agree to hold an OS lock (flock: the kernel drops it when the process dies) while they
update a ref know that a `<ref>.lock` they find is stale, and can remove it."""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import pygit2

from tropo.git.repo import private_dir


@contextmanager
def ref_writer(repo: pygit2.Repository, name: str) -> Iterator[None]:
    """Be the only cooperating writer of ref `name` for the duration; a git lock left
    by a dead cooperating writer is removed on entry. Writers that do not cooperate
    (plain git) still meet git's own lock and fail cleanly, as before."""
    locks = private_dir(repo) / "reflocks"
    locks.mkdir(parents=True, exist_ok=True)
    mutex = locks / hashlib.sha256(name.encode()).hexdigest()[:32]
    with open(mutex, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            (private_dir(repo).parent / f"{name}.lock").unlink(missing_ok=True)
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
