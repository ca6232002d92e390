"""Kernel locks on files under `.git/vivary`: `fcntl.flock` is held by an open file
description, so the kernel drops it when every process holding it has died (kill -9
included), and a lock never outlives its holder. The heartbeat's runner lock works the
same way; here it says who drives a background run and who runs one dispatch.

Another agent in the repository can write under `.git/vivary` too: every file opened
here for appending is opened without following a symlink, and one that is a symlink or
has a second hard link (a victim file outside planted there) is replaced by a file of
our own, never written through. A folder there is reached through
:func:`tropo.fs.private.private_folder`, which refuses one that is a symlink."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def exclusive(path: Path, *, wait: bool = False) -> Iterator[IO[bytes] | None]:
    """The lock on `path` while the block runs, if it is free (None if another holds it);
    with `wait`, once the holder lets go (never None then)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_append(path) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        try:
            yield fh
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def take(path: Path) -> IO[bytes] | None:
    """The open file holding the lock on `path`, to hand to a child process (None if
    another holds it). Closing it does not unlock while the child keeps its copy: the
    lock goes when the last holder of the open file closes it or dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open_append(path)  # never through a planted link; the caller owns it
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return None
    return fh


def is_held(path: Path) -> bool:
    """Someone holds the lock on `path` now (a look, not a promise: it may end next)."""
    if not path.exists():
        return False
    with exclusive(path) as fh:
        return fh is None


_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_append(path: Path) -> IO[bytes]:
    """`path` opened for appending, a regular file with one link that is ours: a symlink,
    a hard link to another file or a FIFO planted in its place is removed first."""
    try:
        fd = os.open(path, _APPEND, 0o600)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENXIO):
            raise
        fd = -1
    if fd >= 0:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            return os.fdopen(fd, "ab")
        os.close(fd)
    path.unlink()
    return os.fdopen(os.open(path, _APPEND | os.O_EXCL, 0o600), "ab")
