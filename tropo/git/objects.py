"""Git objects written and read directly: blobs, trees and commits that never touch the
index or the work tree, so a state machine can keep its history in a ref, and a claim or
an applied proposal can change files, without disturbing the person's checkout.

A tree is edited from object-database pieces: only the trees on an edited path are
rewritten, every other entry is reused by id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pygit2

from tropo.git import gitcli
from tropo.git.repo import signature

FileMap = Mapping[str, bytes | pygit2.Oid]
BLOB = pygit2.GIT_FILEMODE_BLOB
EXECUTABLE = pygit2.GIT_FILEMODE_BLOB_EXECUTABLE
TREE = pygit2.GIT_FILEMODE_TREE
LINK = pygit2.GIT_FILEMODE_LINK


def write_tree(repo: pygit2.Repository, files: FileMap) -> pygit2.Oid:
    """A tree of top-level files; a value is the content or an existing blob's oid
    (reusing a blob spares hashing a large unchanged file again)."""
    builder = repo.TreeBuilder()
    for name, content in sorted(files.items()):
        if "/" in name or not name or name in (".", ".."):
            raise ValueError(f"not a top-level file name: {name!r}")
        oid = content if isinstance(content, pygit2.Oid) else repo.create_blob(content)
        builder.insert(name, oid, pygit2.enums.FileMode.BLOB)
    return builder.write()


def write_commit(
    repo: pygit2.Repository, files: FileMap, parents: list[pygit2.Oid], message: str
) -> pygit2.Oid:
    """A commit of `files` on `parents`, not attached to any ref (the caller moves one)."""
    sig = signature(repo)
    return repo.create_commit(None, sig, sig, message, write_tree(repo, files), parents)


def commit_tree(
    repo: pygit2.Repository, tree: pygit2.Oid, parents: list[pygit2.Oid], message: str
) -> pygit2.Oid:
    """A commit of an already written tree on `parents`, attached to no ref."""
    sig = signature(repo)
    return repo.create_commit(None, sig, sig, message, tree, parents)


# A tree edit by name: content or an existing blob's id (a file), None (remove it), or
# the edit of the subtree under that name.
TreeEdit = Mapping[str, "bytes | pygit2.Oid | TreeEdit | None"]


def edit_tree(repo: pygit2.Repository, base: pygit2.Oid | None, edit: TreeEdit) -> pygit2.Oid | None:
    """The tree ``base`` (None: an empty one) with ``edit`` applied, writing only the trees
    on an edited path: every other entry is reused by id, so an edit of k files in a tree
    of n costs O(k log n), not O(n). A subtree left empty is dropped; None when the whole
    tree is."""
    node = repo[base] if base is not None else None
    assert node is None or isinstance(node, pygit2.Tree)
    builder = repo.TreeBuilder(node) if node is not None else repo.TreeBuilder()
    for name, change in edit.items():
        if "/" in name or name in ("", ".", "..") or "\0" in name:
            raise ValueError(f"not a tree entry name: {name!r}")
        if isinstance(change, Mapping):
            old = builder.get(name)
            sub = edit_tree(repo, old.id if old is not None and old.filemode == TREE else None, change)
            if sub is not None:
                builder.insert(name, sub, TREE)
            elif old is not None:
                builder.remove(name)
        elif change is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            oid = change if isinstance(change, pygit2.Oid) else repo.create_blob(change)
            builder.insert(name, oid, BLOB)
    return builder.write() if len(builder) else None


def tree_entries(repo: pygit2.Repository, tree: pygit2.Oid) -> dict[str, tuple[pygit2.Oid, bool]]:
    """Name -> (oid, is a tree) of each entry of the tree ``tree``."""
    found = repo[tree]
    assert isinstance(found, pygit2.Tree)
    return {e.name: (e.id, e.filemode == TREE) for e in found if e.name is not None}


def tree_of(repo: pygit2.Repository, commit: pygit2.Oid | str) -> pygit2.Oid | None:
    """The root tree of ``commit`` (None: no such commit)."""
    tree = _tree(repo, commit)
    return None if tree is None else tree.id


def _tree(repo: pygit2.Repository, commit: pygit2.Oid | str) -> pygit2.Tree | None:
    try:
        tree = repo[commit].peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.InvalidSpecError):
        return None
    assert isinstance(tree, pygit2.Tree)
    return tree


def blob_at(repo: pygit2.Repository, commit: pygit2.Oid | str, name: str) -> bytes | None:
    """The content of a top-level file in a commit's tree, or None if absent."""
    tree = _tree(repo, commit)
    if tree is None or name not in tree:
        return None
    data: bytes = repo[tree[name].id].read_raw()
    return data


def top_entries(repo: pygit2.Repository, commit: pygit2.Oid | str) -> dict[str, pygit2.Oid] | None:
    """Name -> oid of each top-level entry of a commit's tree, from one tree read (None:
    no such commit)."""
    tree = _tree(repo, commit)
    return None if tree is None else {entry.name: entry.id for entry in tree if entry.name is not None}


def blob_data(repo: pygit2.Repository, oid: pygit2.Oid) -> bytes:
    """The content of the blob ``oid``."""
    data: bytes = repo[oid].read_raw()
    return data


def entry_oid(repo: pygit2.Repository, commit: pygit2.Oid | str, name: str) -> pygit2.Oid | None:
    """The oid of a top-level file in a commit, to reuse it in the next commit."""
    tree = _tree(repo, commit)
    if tree is None or name not in tree:
        return None
    oid: pygit2.Oid = tree[name].id
    return oid


def gc_auto(repo: pygit2.Repository) -> None:
    """Let git pack loose objects when it judges there are too many (``git gc --auto``,
    which git's porcelain runs after a commit and writes made here would otherwise skip).
    git detaches the work; a failure changes nothing."""
    gitcli.call_bytes(Path(repo.path), "gc", "--auto", "--quiet", capture=False)


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


def tree_file(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> TreeFile | None:
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


def commit_files(repo: pygit2.Repository, parent: str | pygit2.Oid, files: Mapping[str, bytes],
                 message: str) -> pygit2.Oid:
    """A new commit on ``parent``: its tree with ``files`` (path -> content, nested paths
    allowed, modes kept) written over it, attached to no ref (the caller moves one).
    HEAD, the index and the working tree are left exactly as they were."""
    base = repo[pygit2.Oid(hex=str(parent))].peel(pygit2.Commit)
    tree = base.tree
    for path, data in sorted(files.items()):
        found = repo[replace_file(repo, tree, path, data)]
        assert isinstance(found, pygit2.Tree)
        tree = found
    sig = signature(repo)
    return repo.create_commit(None, sig, sig, message, tree.id, [base.id])


def tree_files(root: Path, rev: str, suffixes: tuple[str, ...] = ()) -> dict[str, str]:
    """Files of ``rev``'s tree (path -> blob id), optionally only those ending in
    ``suffixes``; one ``ls-tree`` call."""
    found: dict[str, str] = {}
    for record in gitcli.records(root, "ls-tree", "-r", "-z", "--full-tree", rev):
        meta, _, path = record.partition("\t")
        kind, oid = meta.split()[1:3]
        if kind == "blob" and (not suffixes or path.endswith(suffixes)):
            found[path] = oid
    return found
