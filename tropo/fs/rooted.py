"""Writes confined to a root directory: nothing a path says can steer them outside.

A relative path that climbs out, or any existing symlink on the way (or in the
target's place), is refused before anything is touched; the write itself is atomic.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from tropo.fs.atomic import write_atomic


class UnsafePath(ValueError):
    """The relative path would leave the root or pass through a symlink."""


def check_relative(rel: str) -> PurePosixPath:
    """Validate a root-relative posix path: not absolute, no ``..``, ``.`` or empty parts."""
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or any(p in ("..", ".", "") for p in rel.split("/")):
        raise UnsafePath(f"path escapes the target: {rel!r}")
    return path


def check_target(root: Path, rel: str) -> Path:
    """The absolute destination of ``rel``; refuses symlinks and files in parent positions."""
    parts = check_relative(rel).parts
    here = root
    for i, part in enumerate(parts):
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePath(f"refusing to write through a symlink: {'/'.join(parts[: i + 1])}")
        if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
            raise UnsafePath(f"not a directory: {'/'.join(parts[: i + 1])}")
        if i == len(parts) - 1 and not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"not a regular file: {rel}")
    return root.joinpath(*parts)


def write_within(root: Path, rel: str, data: bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to ``root/rel`` atomically; parents are created as real directories."""
    dest = check_target(root, rel)
    dest.parent.mkdir(parents=True, exist_ok=True)
    check_target(root, rel)  # a parent may have been swapped for a link meanwhile
    write_atomic(dest, data, mode=mode)
    return dest
