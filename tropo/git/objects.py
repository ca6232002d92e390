"""Git objects written directly through pygit2: small flat trees and commits that never
touch the index or the work tree, so a state machine can keep its history in a ref
without disturbing the person's checkout."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

import pygit2

from tropo.git.repo import signature

FileMap = Mapping[str, bytes | pygit2.Oid]


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
    subprocess.run(
        ["git", "--git-dir", repo.path, "gc", "--auto", "--quiet"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


def file_at_head(repo: pygit2.Repository, path: str) -> bytes | None:
    """A file's content as HEAD commits it (`path` may name a nested file), or None:
    what the workspace committed, not what someone wrote in its working tree since."""
    if repo.head_is_unborn:
        return None
    tree = repo.head.peel(pygit2.Commit).tree
    try:
        obj = repo[tree[path].id]
    except KeyError:
        return None
    return obj.read_raw() if isinstance(obj, pygit2.Blob) else None
