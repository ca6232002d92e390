"""Reading and editing trees without a work tree or an index.

A claim commit must change one file while leaving the user's checkout alone, so the
new tree is built from object-database pieces: only the trees on the edited path are
rewritten, every other entry is reused by id.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

BLOB = pygit2.GIT_FILEMODE_BLOB
EXECUTABLE = pygit2.GIT_FILEMODE_BLOB_EXECUTABLE
TREE = pygit2.GIT_FILEMODE_TREE
LINK = pygit2.GIT_FILEMODE_LINK


class TreePathError(ValueError):
    """A path that cannot be read or written as a plain file in a tree."""


@dataclass(frozen=True)
class TreeFile:
    """One entry found at a path: its bytes and its mode (symlinks included)."""

    data: bytes
    filemode: int


def _parts(path: str) -> list[str]:
    parts = path.split("/")
    if not path or any(p in ("", ".", "..") for p in parts) or "\0" in path:
        raise TreePathError(f"not a tree path: {path!r}")
    return parts


def read_file(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> TreeFile | None:
    """The entry at ``path`` (posix, relative to ``tree``), or None when absent."""
    node: pygit2.Tree = tree
    parts = _parts(path)
    for i, name in enumerate(parts):
        try:
            entry = node[name]
        except KeyError:
            return None
        if i == len(parts) - 1:
            if entry.filemode not in (BLOB, EXECUTABLE, LINK):
                return None
            blob = repo[entry.id]
            assert isinstance(blob, pygit2.Blob)
            return TreeFile(blob.data, entry.filemode)
        if entry.filemode != TREE:
            return None
        sub = repo[entry.id]
        assert isinstance(sub, pygit2.Tree)
        node = sub
    return None  # pragma: no cover - the loop always returns


def replace_file(
    repo: pygit2.Repository, tree: pygit2.Tree, path: str, data: bytes
) -> pygit2.Oid:
    """A new root tree equal to ``tree`` except that the regular file at ``path`` holds
    ``data`` (mode kept; created as a plain file when absent). Symlinks are refused."""
    parts = _parts(path)

    def rebuild(node: pygit2.Tree | None, rest: list[str]) -> pygit2.Oid:
        builder = repo.TreeBuilder(node) if node is not None else repo.TreeBuilder()
        name = rest[0]
        entry = node[name] if node is not None and name in node else None
        if len(rest) == 1:
            mode = BLOB if entry is None else entry.filemode
            if mode not in (BLOB, EXECUTABLE):
                raise TreePathError(f"{path}: not a regular file in the tree")
            builder.insert(name, repo.create_blob(data), mode)
            return builder.write()
        sub: pygit2.Tree | None = None
        if entry is not None:
            if entry.filemode != TREE:
                raise TreePathError(f"{path}: {name} is not a directory in the tree")
            found = repo[entry.id]
            assert isinstance(found, pygit2.Tree)
            sub = found
        builder.insert(name, rebuild(sub, rest[1:]), TREE)
        return builder.write()

    return rebuild(tree, parts)
