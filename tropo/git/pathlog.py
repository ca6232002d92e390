"""One file's commits: the first-parent walk that says when a path appeared, changed or
was renamed, with the bytes on either side.

Compares the blob at the tracked path with the parent's, so an unchanged commit costs
two tree lookups; only where the parent lacks the path is a rename search (a tree diff)
run, and the walk follows the file back under its old name.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from tropo.git.types import Blob, Commit, Tree


@dataclass(frozen=True)
class Step:
    """A commit that touched the file; ``before`` is its bytes in the parent (at
    ``from_path`` for a rename), None where the commit added it."""

    commit: Commit
    kind: str  # added | changed | renamed
    path: str
    from_path: str | None
    before: bytes | None
    after: bytes


def _blob(tree: Tree, path: str) -> Blob | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return obj if isinstance(obj, Blob) else None


def _renamed_from(parent: Commit, commit: Commit, path: str) -> str | None:
    diff = parent.tree.diff_to_tree(commit.tree)
    diff.find_similar()
    for d in diff.deltas:
        if d.status == pygit2.enums.DeltaStatus.RENAMED and d.new_file.path == path:
            return str(d.old_file.path)
    return None


def path_log(head: Commit, path: str) -> list[Step]:
    """The steps of the file at ``path`` in ``head``, oldest first (empty when ``head``
    has no such file)."""
    steps: list[Step] = []
    commit: Commit | None = head
    while commit is not None:
        blob = _blob(commit.tree, path)
        if blob is None:
            break
        parent = commit.parents[0] if commit.parents else None
        before = _blob(parent.tree, path) if parent is not None else None
        if before is not None and before.id == blob.id:
            commit = parent
            continue
        if before is not None:
            steps.append(Step(commit, "changed", path, None, before.data, blob.data))
            commit = parent
            continue
        old_path = _renamed_from(parent, commit, path) if parent is not None else None
        if parent is None or old_path is None:
            steps.append(Step(commit, "added", path, None, None, blob.data))
            break
        old_blob = _blob(parent.tree, old_path)
        steps.append(Step(commit, "renamed", path, old_path,
                          old_blob.data if old_blob is not None else None, blob.data))
        path, commit = old_path, parent
    steps.reverse()
    return steps
