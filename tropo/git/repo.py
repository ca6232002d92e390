"""Opening the repository: the one place that finds it, its work tree and its git dirs.

Every durable fact of a workspace lives in its git repository, so every part of the
toolkit opens it here; refs are moved in :mod:`tropo.git.refs`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from tropo.fs.private import private_folder
from tropo.git.gitcli import NotARepository as NotARepository
from tropo.git.gitcli import RevisionError as RevisionError
from tropo.git.revspec import AmbiguousRevision as AmbiguousRevision
from tropo.git.revspec import resolve_commit as resolve_commit  # the one resolver of a typed revision


def discover(path: str | os.PathLike[str]) -> pygit2.Repository | None:
    """The repository whose work tree contains ``path``, or None outside any.

    Opened directly (git searches upwards, as discovery does): pygit2 1.21's
    ``discover_repository`` returns None without a reference, so each call outside a
    repository took one from None and a long-lived process aborted once they ran out."""
    try:
        return pygit2.Repository(str(path))
    except pygit2.GitError:
        return None


def require(path: str | os.PathLike[str]) -> pygit2.Repository:
    """Like :func:`discover` but raising :class:`NotARepository`."""
    repo = discover(path)
    if repo is None:
        raise NotARepository(f"not a git repository: {Path(path).resolve()}")
    return repo


def workdir(repo: pygit2.Repository) -> Path:
    """The work tree root (no trailing slash)."""
    if repo.workdir is None:
        raise NotARepository(f"bare repository has no work tree: {repo.path}")
    return Path(repo.workdir).resolve()


def common_dir(repo: pygit2.Repository) -> Path:
    """The git dir every worktree of the repository shares (a linked worktree's own is
    ``.git/worktrees/<name>``; refs, objects and caches live in the common one)."""
    common = Path(repo.path).resolve()
    commondir_file = common / "commondir"
    if commondir_file.is_file():
        common = (common / commondir_file.read_text().strip()).resolve()
    return common


def private_dir(repo: pygit2.Repository, *parts: str, create: bool = False) -> Path:
    """``.git/vivary/parts...``: disposable caches and worktrees, never a second truth,
    reached symlink-safe (:func:`tropo.fs.private.private_folder`)."""
    return private_folder(common_dir(repo), *parts, create=create)


def head_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    """HEAD's commit, or None in a repository with no commits yet."""
    if repo.head_is_unborn:
        return None
    obj = repo.head.peel(pygit2.Commit)
    assert isinstance(obj, pygit2.Commit)
    return obj


def branch_name(repo: pygit2.Repository) -> str | None:
    """The branch checked out (``main``), None on a detached or unborn HEAD."""
    if repo.head_is_detached or repo.head_is_unborn:
        return None
    name: str = repo.head.shorthand
    return name


def signature(repo: pygit2.Repository) -> pygit2.Signature:
    """The configured identity, or a neutral one so a fresh machine can still write."""
    try:
        return repo.default_signature
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("vivary", "vivary@localhost")
