"""Whole-or-nothing file writes: a crash leaves the old file or the new, never half."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(
    path: Path, data: bytes, *, mode: int | None = None, fsync: bool = True
) -> None:
    """Replace ``path`` with ``data`` through a temporary file in the same folder.

    ``fsync=False`` is for disposable caches: still whole-or-nothing, not crash-durable.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
