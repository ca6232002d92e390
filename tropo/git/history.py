"""File dates from git history, read in one pass over the commits and cached by commit.

``created``/``updated`` are the author dates (``YYYY-MM-DD``, in the author's zone) of the
oldest and newest commits that changed a path, as ``git log --date=short -- PATH`` shows
them for a linear history. Merge commits are not walked for changes: the commits they
merge are.
"""

from __future__ import annotations

import contextlib
import datetime
import marshal
from pathlib import Path

import pygit2

from tropo.fs.atomic import write_atomic
from tropo.git import repo as gitrepo

Dates = dict[str, tuple[str, str]]  # repo-relative path -> (created, updated)
_VERSION = 1


def _day(commit: pygit2.Commit) -> str:
    sig = commit.author
    zone = datetime.timezone(datetime.timedelta(minutes=sig.offset))
    return datetime.datetime.fromtimestamp(sig.time, zone).date().isoformat()


def _changed(repo: pygit2.Repository, commit: pygit2.Commit) -> list[str]:
    if len(commit.parents) > 1:
        return []
    if commit.parents:
        diff = commit.parents[0].tree.diff_to_tree(commit.tree)
    else:
        diff = commit.tree.diff_to_tree(swap=True)
    gone = pygit2.enums.DeltaStatus.DELETED
    return [d.new_file.path for d in diff.deltas if d.status != gone]


def _walk(repo: pygit2.Repository, head: pygit2.Commit, stop: str | None, dates: Dates) -> None:
    """Fold the commits reachable from ``head`` (and not from ``stop``) into ``dates``."""
    walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    if stop is not None:
        walker.hide(pygit2.Oid(hex=stop))
    for commit in walker:
        day = _day(commit)
        for path in _changed(repo, commit):
            old = dates.get(path)
            dates[path] = (min(old[0], day), max(old[1], day)) if old else (day, day)


def _cache_file(repo: pygit2.Repository) -> Path:
    return gitrepo.private_dir(repo) / f"dates.v{_VERSION}"


def _load(path: Path) -> tuple[str, Dates] | None:
    try:
        head, dates = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(head, str) or not isinstance(dates, dict):
        return None
    return head, dates


def file_dates(repo: pygit2.Repository, head: pygit2.Commit, *, use_cache: bool = True) -> Dates:
    """Dates of every path ever changed up to ``head``; incremental from a cached ancestor."""
    cache = _cache_file(repo)
    cached = _load(cache) if use_cache else None
    dates: Dates = {}
    stop = None
    if cached is not None:
        if cached[0] == str(head.id):
            return cached[1]
        if repo.descendant_of(head.id, pygit2.Oid(hex=cached[0])):
            dates, stop = cached[1], cached[0]
    _walk(repo, head, stop, dates)
    if use_cache:
        with contextlib.suppress(OSError):  # a cache we cannot write is only slower next time
            write_atomic(cache, marshal.dumps((str(head.id), dates)))
    return dates
