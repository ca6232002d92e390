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


def ref_tips(repo: pygit2.Repository, prefix: str) -> dict[str, tuple[str, int]]:
    """Each ref under `prefix` with the commit it points at and that commit's time
    (seconds since the epoch): one pass over the refs, one header read per tip, so a
    watcher can tell what moved and order chains by activity without reading them."""
    out: dict[str, tuple[str, int]] = {}
    for name in repo.references:
        if name.startswith(prefix):
            commit = repo.references[name].peel(pygit2.Commit)
            out[name] = (str(commit.id), commit.commit_time)
    return out
