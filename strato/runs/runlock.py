"""Kernel locks on files under `.git/vivary`: `fcntl.flock` is held by an open file
description, so the kernel drops it when every process holding it has died (kill -9
included), and a lock never outlives its holder. The heartbeat's runner lock works the
same way; here it says who drives a background run and who runs one dispatch."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[IO[bytes] | None]:
    """The lock on `path` while the block runs, if it is free (None if another holds it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
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
    fh = open(path, "ab")  # noqa: SIM115 - the caller owns it
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
