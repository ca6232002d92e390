"""Claim scopes: a project plus paths, and when two scopes overlap.

A path has one lexical identity: separators and dot segments collapse, and Windows
drive, UNC and ``\\\\?\\`` device spellings fold to one lower-case form on every
host, so no second spelling can claim the same tree twice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

from exo.control.text import is_bounded_text

_DRIVE = re.compile(r"^[A-Za-z]:")
MAX_PATHS = 1_000
_MAX_PROJECT_BYTES = 256
_MAX_PATH_BYTES = 4_096
_MAX_SEGMENTS = 256

#: (project, kind, anchor, segments): two paths overlap when their first three agree
#: and one's segments start the other's.
PathKey = tuple[str, str, str, tuple[str, ...]]


def _fold(value: str) -> str:
    return unicodedata.normalize("NFC", value.casefold())


def _collapse(segments: Iterable[str]) -> list[str]:
    kept: list[str] = []
    for segment in segments:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment not in ("", "."):
            kept.append(segment)
    return kept


def normalize_path(path: str) -> str:
    """The one spelling of ``path`` (already validated text)."""
    raw = path.replace("\\", "/")
    if _DRIVE.match(raw):
        rest = raw[2:]
        segments = [_fold(s) for s in _collapse(rest.split("/"))]
        joined = "/".join(segments)
        if rest.startswith("/"):
            joined = "/" + joined
        return _fold(raw[:2]) + joined
    if raw.startswith("//"):
        parts = [s for s in raw.split("/") if s]
        if len(parts) >= 2 and parts[0] in ("?", "."):
            device = parts[1:]
            if _DRIVE.match(device[0]):
                inner = "/".join(device)
                return normalize_path(inner + "/" if len(inner) == 2 else inner)
            if _fold(device[0]) == "unc" and len(device) >= 3:
                return normalize_path("//" + "/".join(device[1:]))
        if len(parts) >= 2:
            return "//" + "/".join([_fold(parts[0]), _fold(parts[1]),
                                    *(_fold(s) for s in _collapse(parts[2:]))])
    segments = _collapse(raw.split("/"))
    if raw.startswith("/"):
        return "/" + "/".join(segments)
    return "/".join(segments) or "."


def normalize(scope: dict[str, Any]) -> dict[str, Any]:
    """The scope with its paths normalized, de-duplicated and sorted (UTF-16 order)."""
    paths = dict.fromkeys(normalize_path(p) for p in scope["paths"])
    return {"project": scope["project"],
            "paths": sorted(paths, key=lambda p: p.encode("utf-16-be", "surrogatepass"))}


def is_valid(scope: Any) -> bool:
    """Exactly ``{project, paths}``: canonical project text, 1 to 1000 bounded paths."""
    return (
        type(scope) is dict
        and set(scope) == {"project", "paths"}
        and is_bounded_text(scope["project"], _MAX_PROJECT_BYTES)
        and type(scope["paths"]) is list
        and 0 < len(scope["paths"]) <= MAX_PATHS
        and all(
            is_bounded_text(p, _MAX_PATH_BYTES)
            and p.count("/") + p.count("\\") <= _MAX_SEGMENTS
            for p in scope["paths"]
        )
    )


def path_key(project: str, path: str) -> PathKey:
    """The overlap key of a normalized path."""
    if _DRIVE.match(path):
        rest = path[2:]
        kind = "drive_absolute" if rest.startswith("/") else "drive_relative"
        return project, kind, path[:2], tuple(s for s in rest.split("/") if s)
    if path.startswith("//"):
        parts = path[2:].split("/")
        return project, "unc", "/".join(parts[:2]), tuple(parts[2:])
    if path.startswith("/"):
        return project, "posix", "/", tuple(s for s in path[1:].split("/") if s)
    return project, "relative", "", () if path == "." else tuple(path.split("/"))


def keys(scope: dict[str, Any]) -> list[PathKey]:
    """The overlap keys of an already normalized scope."""
    return [path_key(scope["project"], p) for p in scope["paths"]]


def _prefixes(key: PathKey) -> Iterator[PathKey]:
    project, kind, anchor, segments = key
    for length in range(len(segments) + 1):
        yield project, kind, anchor, segments[:length]


def overlapping(target: dict[str, Any], others: list[dict[str, Any]]) -> list[int]:
    """Indices of the normalized ``others`` that overlap the normalized ``target``, in
    work linear in the total path depth (no pairwise join)."""
    own = set(keys(target))
    own_prefixes = {prefix for key in own for prefix in _prefixes(key)}
    return [
        index
        for index, other in enumerate(others)
        if any(key in own_prefixes or any(p in own for p in _prefixes(key))
               for key in keys(other))
    ]


def pairwise_disjoint(scopes: list[dict[str, Any]]) -> bool:
    """Whether no two of the normalized ``scopes`` overlap (a scope may nest its own
    paths), in work linear in the total path depth."""
    entries = sorted(((key, index) for index, scope in enumerate(scopes) for key in keys(scope)),
                     key=lambda entry: len(entry[0][3]))
    owner: dict[PathKey, int] = {}
    for key, index in entries:
        if any(owner.get(prefix, index) != index for prefix in _prefixes(key)):
            return False
        owner.setdefault(key, index)
    return True
