"""Lexical path rules for scope roots: a request's scope and its capsule's task scope
name the same directories even when written with other separators or a trailing slash.

Purely lexical: a decision never touches the disk it talks about.
"""

from __future__ import annotations

import re
from typing import Any

# JavaScript String.prototype.trim's character set (Python's strip() misses U+FEFF).
_JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_DRIVE = re.compile(r"^[A-Za-z]:")
_DRIVE_ROOT = re.compile(r"^[a-z]:/")


def normalize(raw: str) -> str:
    """Forward slashes, lowercase drive letter, no trailing slash."""
    path = raw.strip(_JS_WHITESPACE).replace("\\", "/")
    if _DRIVE.match(path):
        path = path[0].lower() + path[1:]
    return path.rstrip("/") if len(path) > 1 else path


def is_absolute_root(raw: Any) -> bool:
    """POSIX-absolute (UNC included) or drive-absolute: usable as a scope root."""
    if not isinstance(raw, str):
        return False
    path = normalize(raw)
    return path.startswith("/") or bool(_DRIVE_ROOT.match(path))


def is_canonical_absolute(path: Any) -> bool:
    """Already normalized, absolute, and free of `.` and `..` segments."""
    return (
        isinstance(path, str)
        and normalize(path) == path
        and is_absolute_root(path)
        and not any(segment in (".", "..") for segment in path.split("/"))
    )


def is_checkout_relative(path: Any) -> bool:
    """Normalized, relative, no drive and no `.` or `..`: a path confined to one checkout."""
    return (
        isinstance(path, str)
        and bool(path.strip())
        and normalize(path) == path
        and not is_absolute_root(path)
        and not _DRIVE.match(path)
        and not any(segment in (".", "..") for segment in path.split("/"))
    )


def _collapse(path: str) -> str:
    drive = path[:2] if _DRIVE_ROOT.match(path) else ""
    kept: list[str] = []
    for segment in path[len(drive) :].split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if kept:
                kept.pop()
        else:
            kept.append(segment)
    return drive + "/" + "/".join(kept)


def _under(root: str, child: str) -> bool:
    return child == root or child.startswith(root + "/")


def is_within(root: str, child: str) -> bool:
    """`child` is `root` or below it; a `..` may only narrow the answer."""
    r, c = normalize(root), normalize(child)
    if not _under(r, c):
        return False
    if ".." not in c.split("/"):
        return True
    unambiguous = (r.startswith("/") and not r.startswith("//")) or bool(_DRIVE_ROOT.match(r))
    return not unambiguous or _under(_collapse(r), _collapse(c))


def path_identity(path: str) -> str:
    """Windows (drive or UNC) paths compare case-insensitively, POSIX ones exactly."""
    path = normalize(path)
    return path.lower() if _DRIVE_ROOT.match(path) or path.startswith("//") else path


def is_within_allowlist(root: str, child: str) -> bool:
    """`is_within`, with Windows paths compared case-insensitively."""
    return is_within(path_identity(root), path_identity(child))


def same_roots(left: Any, right: Any) -> bool:
    """Two root lists name the same directories, in any order, one to one."""
    if not isinstance(left, list) or not isinstance(right, list) or len(left) != len(right):
        return False
    unmatched = list(right)
    for root in left:
        for index, other in enumerate(unmatched):
            if is_within_allowlist(root, other) and is_within_allowlist(other, root):
                del unmatched[index]
                break
        else:
            return False
    return True
