"""Commit chains held by refs (runs keep one per run under `refs/vivary/runs/`): list
the refs under a prefix and read a chain's commits, newest first, as plain values.

A follower that has read up to one commit asks only for what came after it, so the
walk hides that commit's ancestry instead of reading the whole chain again.
"""

from __future__ import annotations

import pygit2


def ref_names(repo: pygit2.Repository, prefix: str) -> list[str]:
    """The full names of the refs that start with `prefix`, sorted."""
    return sorted(name for name in repo.references if name.startswith(prefix))


def commits_since(repo: pygit2.Repository, head: str, seen: str | None = None) -> list[tuple[str, str]]:
    """(commit id, message) from `head` back to, but excluding, `seen` and its ancestors
    (to the root when `seen` is None), in topological order, newest first."""
    walker = repo.walk(pygit2.Oid(hex=head), pygit2.enums.SortMode.TOPOLOGICAL)
    if seen is not None:
        walker.hide(pygit2.Oid(hex=seen))
    return [(str(c.id), c.message) for c in walker]


def parents(repo: pygit2.Repository, commit: str) -> list[str]:
    """The ids of `commit`'s parents, first parent first."""
    return [str(p) for p in repo[pygit2.Oid(hex=commit)].peel(pygit2.Commit).parent_ids]


def message_of(repo: pygit2.Repository, commit: str) -> str:
    return repo[pygit2.Oid(hex=commit)].peel(pygit2.Commit).message


def merge_base(repo: pygit2.Repository, a: str, b: str) -> str | None:
    """The best common ancestor of two commits (None: their histories are unrelated)."""
    found = repo.merge_base(pygit2.Oid(hex=a), pygit2.Oid(hex=b))
    return None if found is None else str(found)


def ref_targets(repo: pygit2.Repository, prefix: str) -> dict[str, str]:
    """Each ref under `prefix` with the object it points at: one pass over the refs and
    no object read, the cheap way for a watcher to see what moved."""
    return {ref.name: str(ref.target) for ref in repo.references.iterator()
            if ref.name.startswith(prefix) and isinstance(ref.target, pygit2.Oid)}


def ref_tips(repo: pygit2.Repository, prefix: str) -> dict[str, tuple[str, int]]:
    """Each ref under `prefix` with the commit it points at and that commit's time
    (seconds since the epoch), to order chains by activity without reading them."""
    out: dict[str, tuple[str, int]] = {}
    for name, target in ref_targets(repo, prefix).items():
        found = repo[target]
        if found.type == pygit2.enums.ObjectType.COMMIT:
            out[name] = (target, found.peel(pygit2.Commit).commit_time)
    return out
