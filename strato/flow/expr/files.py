"""`file_exists` / `file_contains`: read-only access jailed to the workspace root.

Relative paths only, no NUL, no `..` segment; the resolved real path must stay under
the real root (so symlinks cannot lead out), and the final open refuses to follow a
symlink swapped in after the check. Missing or non-regular files read as absent."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from strato.flow.expr.errors import ExprError

MAX_FILE_BYTES = 16 * 1024 * 1024


def _jailed(root: Path | None, rel: str) -> Path:
    if root is None:
        raise ExprError("validation_error", "file predicates need a workspace root")
    if not rel or "\0" in rel:
        raise ExprError("validation_error", "file path must be a non-empty string without NUL")
    pure = PurePosixPath(rel)
    if pure.is_absolute() or rel.startswith("\\") or ".." in pure.parts or "\\" in rel:
        raise ExprError("validation_error", f"file path {rel!r} must stay inside the workspace")
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(real_root / pure))
    if real != real_root and real_root not in real.parents:
        raise ExprError("validation_error", f"file path {rel!r} resolves outside the workspace")
    return real


def read_file(root: Path | None, rel: str) -> bytes | None:
    """The file's bytes, or None when it is missing or not a regular file."""
    path = _jailed(root, rel)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:  # ELOOP: a symlink appeared after the check; EACCES
        raise ExprError("validation_error", f"cannot open {rel!r}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > MAX_FILE_BYTES:
            raise ExprError("resource_limit", f"{rel!r} is larger than 16 MiB")
        chunks: list[bytes] = []
        remaining = MAX_FILE_BYTES + 1
        while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
            chunks.append(chunk)
            remaining -= len(chunk)
        if remaining <= 0:
            raise ExprError("resource_limit", f"{rel!r} is larger than 16 MiB")
        return b"".join(chunks)
    finally:
        os.close(fd)


def file_exists(root: Path | None, rel: str) -> bool:
    path = _jailed(root, rel)
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode)


def file_contains(root: Path | None, rel: str, text: str) -> bool:
    data = read_file(root, rel)
    return data is not None and text.encode("utf-8", "surrogatepass") in data
