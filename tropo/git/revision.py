"""Files as a revision records them, never as the working tree has them.

Trust roots (allowed signers, guard config) are read this way so that an edit in the
working tree, or in the environment, cannot grant anything.
"""

from __future__ import annotations

import pygit2


def read_file(commit: pygit2.Commit | None, path: str) -> bytes | None:
    """The bytes of ``path`` in ``commit``'s tree; None when absent or not a file."""
    if commit is None:
        return None
    try:
        obj = commit.tree[path]
    except KeyError:
        return None
    return obj.data if isinstance(obj, pygit2.Blob) else None


def is_ancestor(repo: pygit2.Repository, ancestor: str, descendant: str) -> bool:
    """True when ``ancestor`` is ``descendant`` or reachable from it."""
    if ancestor == descendant:
        return True
    try:
        return bool(repo.descendant_of(pygit2.Oid(hex=descendant), pygit2.Oid(hex=ancestor)))
    except (KeyError, ValueError, pygit2.GitError):
        return False
