"""Linked worktrees: a separate checkout of one branch, made through pygit2."""

from __future__ import annotations

import re
from pathlib import Path

import pygit2


class WorktreeError(Exception):
    """The worktree cannot be created where or how it was asked."""


def add_worktree(repo: pygit2.Repository, path: Path, branch: str) -> Path:
    """Check ``branch`` (a full ``refs/heads/...`` name) out in a new worktree at
    ``path``, which must not exist yet. The worktree's admin name follows the path's
    last component, as ``git worktree add`` does."""
    target = path.resolve()
    if target.exists() or target.is_symlink():
        raise WorktreeError(f"{path}: already exists; choose a new directory")
    name = re.sub(r"[^A-Za-z0-9._-]", "-", target.name) or "worktree"
    if name in repo.list_worktrees():
        raise WorktreeError(f"a worktree named {name!r} already exists; choose another path")
    try:
        repo.add_worktree(name, str(target), repo.references[branch])
    except (KeyError, pygit2.GitError) as exc:
        raise WorktreeError(f"cannot add worktree at {path}: {exc}") from exc
    return target


def checked_out_at(repo: pygit2.Repository, branch: str) -> Path | None:
    """The linked worktree that has ``branch`` checked out, if any."""
    for name in repo.list_worktrees():
        worktree = repo.lookup_worktree(name)
        if worktree.is_prunable:
            continue
        try:
            linked = pygit2.Repository(worktree.path)
        except pygit2.GitError:
            continue
        if not linked.head_is_unborn and not linked.head_is_detached \
                and linked.head.name == branch:
            return Path(worktree.path)
    return None
