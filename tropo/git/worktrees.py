"""Linked worktrees: a checkout of one branch where the person asks for it, and
disposable ones for isolated edits whose changes are merged back.

Disposable worktrees live under `.git/vivary/worktrees/<group>/<name>` with a detached
HEAD (no branch is left behind). Merging is done on trees in memory first, so a conflict
is found before anything in the person's work tree or index changes, and the merged
tree can be recorded before it is applied."""

from __future__ import annotations

import contextlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pygit2

from tropo.git.repo import head_commit, private_dir

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class WorktreeError(Exception):
    """A worktree cannot be created where or how it was asked, or its changes cannot be
    merged back."""


@dataclass(frozen=True)
class Worktree:
    name: str
    path: Path
    base: pygit2.Oid


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


def _admin_name(group: str, name: str) -> str:
    for part in (group, name):
        if not _SAFE.match(part):
            raise WorktreeError(f"unsafe worktree name: {part!r}")
    return f"vivary-{group}-{name}"


def add(repo: pygit2.Repository, group: str, name: str) -> Worktree:
    """A new worktree at HEAD, detached, under `.git/vivary/worktrees/<group>/<name>`."""
    admin = _admin_name(group, name)
    base = head_commit(repo)
    if base is None:
        raise WorktreeError("the repository has no commits: nothing to check out")
    path = private_dir(repo, "worktrees") / group / name
    remove(repo, Worktree(admin, path, base.id))  # a leftover from a crashed run
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        branch = repo.branches.local.create(f"vivary-tmp/{admin}", base, force=True)
    except (pygit2.GitError, OSError) as exc:
        raise WorktreeError(f"cannot create worktree {path}: {exc}") from exc
    try:
        wt = repo.add_worktree(admin, str(path), branch)
        pygit2.Repository(wt.path).set_head(base.id)  # detach, then drop the branch
    except (pygit2.GitError, OSError, ValueError) as exc:
        shutil.rmtree(path, ignore_errors=True)
        raise WorktreeError(f"cannot create worktree {path}: {exc}") from exc
    finally:
        branch.delete()
    return Worktree(admin, path, base.id)


def remove(repo: pygit2.Repository, wt: Worktree) -> None:
    """Delete the worktree's files and its registration (idempotent)."""
    shutil.rmtree(wt.path, ignore_errors=True)
    with contextlib.suppress(KeyError, pygit2.GitError):
        repo.lookup_worktree(wt.name).prune(True)


def snapshot(wt: Worktree) -> pygit2.Oid:
    """The tree of everything in the worktree now (new files included), written
    through the worktree's own index."""
    inner = pygit2.Repository(str(wt.path))
    inner.index.add_all()
    inner.index.write()
    tree: pygit2.Oid = inner.index.write_tree()
    return tree


def merge_in_order(
    repo: pygit2.Repository, base: pygit2.Oid, items: list[tuple[pygit2.Oid, pygit2.Oid]]
) -> tuple[pygit2.Oid, int]:
    """The tree of ``base`` with each item's changes, ``(its base, its tree or commit)``,
    merged in order, all in memory, and how many files it changes against ``base``.

    Each item's change is what it did to its own base (a cherry-pick: items that started
    from different commits bring only their own edits). A conflict between items raises
    WorktreeError naming the paths."""
    base_tree = _tree(repo, base)
    current = base_tree
    for i, (start, oid) in enumerate(items):
        merged = repo.merge_trees(_tree(repo, start), current, _tree(repo, oid))
        if merged.conflicts is not None:
            paths = sorted({(e.path) for c in merged.conflicts for e in c if e is not None})
            raise WorktreeError(f"item {i} conflicts on {', '.join(paths)}")
        current = _tree(repo, merged.write_tree(repo))
    return current.id, int(base_tree.diff_to_tree(current).stats.files_changed)


def apply_change(repo: pygit2.Repository, base: pygit2.Oid, tree: pygit2.Oid, *, check: bool = False) -> None:
    """Apply what ``tree`` changes against ``base`` to the work tree and the index;
    ``check``: only make sure it would apply (WorktreeError when local changes are in
    its way), touching nothing."""
    diff = _tree(repo, base).diff_to_tree(_tree(repo, tree))
    if not diff.stats.files_changed:
        return
    try:
        repo.applies(diff, pygit2.enums.ApplyLocation.BOTH, raise_error=True)
    except pygit2.GitError as exc:
        raise WorktreeError(f"the merged changes do not apply to the work tree: {exc}") from exc
    if not check:
        repo.apply(diff, pygit2.enums.ApplyLocation.BOTH)


def _tree(repo: pygit2.Repository, oid: pygit2.Oid) -> pygit2.Tree:
    try:
        tree = repo[oid].peel(pygit2.Tree)
    except (KeyError, ValueError) as exc:
        raise WorktreeError(f"{oid} is not a tree or commit of this repository") from exc
    assert isinstance(tree, pygit2.Tree)
    return tree
