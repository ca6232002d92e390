"""History walks: a chain's commits, what each commit changed, one file's steps, the
commits since a revision and the dates of every file.

Each walk reads what changed, never whole trees: a follower that has read up to one
commit asks only for what came after it (the walk hides that commit's ancestry), a check
of a long history asks one ``git diff-tree --stdin`` for every (commit, parent) pair, one
``git log`` answers "what happened since REV" for every file at once, one file's walk
compares one blob per commit, and the file dates are folded once and cached by commit.
"""

from __future__ import annotations

import contextlib
import datetime
import marshal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pygit2

from tropo.fs.atomic import write_atomic
from tropo.fs.private import PlantedLink
from tropo.git import gitcli
from tropo.git.repo import private_dir
from tropo.git.types import Blob, Commit, Tree

# --- chains held by refs (runs keep one per run under ``refs/vivary/runs/``) ----------

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
    """The full message of ``commit``."""
    return repo[pygit2.Oid(hex=commit)].peel(pygit2.Commit).message


# --- what each commit changed against each parent, in one stream ------------------

class Change(NamedTuple):
    """One path that differs between a commit and a parent (``git diff-tree --raw``); a
    tuple, as a check of a long history makes one per line appended."""

    path: str  # undecodable bytes kept as surrogates
    old: str  # the blob or tree before (zeros when added)
    new: str  # and after (zeros when deleted)
    status: str  # A, D, M, T, ... as git says


def graph(repo: pygit2.Repository, tip: str, hide: str | None = None) -> list[list[str]]:
    """``[commit, *parents]`` for every commit reachable from ``tip`` (and not from
    ``hide``, when given), children before their parents (``--topo-order``)."""
    hidden = () if hide is None else (f"^{hide}",)
    out = gitcli.output(Path(repo.path), "rev-list", "--topo-order", "--parents", tip, *hidden)
    return [line.split() for line in out.decode("ascii").splitlines() if line]


def changes(repo: pygit2.Repository, pairs: list[tuple[str, str | None]]) -> list[list[Change]]:
    """For each ``(commit, parent)`` pair (parent None: against nothing, as for a root
    commit), every path that differs, subtrees walked (``-r``); one git process for all."""
    stdin = "".join(f"{c}\n" if p is None else f"{c} {p}\n" for c, p in pairs).encode()
    out = gitcli.output(Path(repo.path), "diff-tree", "--stdin", "--root", "--always", "-r", "-z",
                        stdin=stdin)
    tokens = iter(out.decode("utf-8", "surrogateescape").split("\0"))
    found: list[list[Change]] = []
    for token in tokens:
        if token.startswith(":"):  # ":<old mode> <new mode> <old> <new> <status>", then the path
            _, _, old, new, status = token.split(" ")
            found[-1].append(Change(next(tokens), old, new, status))
        elif token:  # the header git prints for each pair (--always: even when nothing differs)
            found.append([])
    if len(found) != len(pairs):
        raise gitcli.GitError(f"git diff-tree answered {len(found)} of {len(pairs)} commit pairs")
    return found


# --- one file's commits: when it appeared, changed or was renamed ------------------

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


# --- what happened since a revision, read in one ``git log`` pass ------------------

_LOG_FORMAT = "%x1e%H%x1f%P%x1f%ct%x1f%an%x1f%s%x1f%b%x1f"


@dataclass(frozen=True)
class LogCommit:
    """One commit as ``git log`` lists it: what changed and why (message and trailers)."""

    oid: str
    parents: tuple[str, ...]
    time: int
    author: str
    subject: str
    body: str
    changes: tuple[tuple[str, str], ...]  # (status letter, path), renames off


def log(root: Path, head: str, since: str | None = None, *, max_count: int | None = None,
        paths: Iterable[str] = ()) -> list[LogCommit]:
    """Commits reachable from ``head`` and not from ``since``, newest first, in one pass.

    A shallow clone simply ends where its history does."""
    args = ["log", "-z", "--no-renames", "--name-status", f"--format={_LOG_FORMAT}"]
    if max_count is not None:
        args.append(f"--max-count={max_count}")
    args.append(head if since is None else f"{since}..{head}")
    wanted = list(paths)
    if wanted:
        args += ["--", *wanted]
    out = gitcli.run(root, *args)
    found: list[LogCommit] = []
    for record in out.split("\x1e")[1:]:
        oid, parents, ctime, author, subject, body, rest = record.split("\x1f", 6)
        names = [p for p in rest.strip("\n\0").split("\0") if p]
        pairs = tuple((names[i].strip(), names[i + 1]) for i in range(0, len(names) - 1, 2))
        found.append(LogCommit(oid, tuple(parents.split()), int(ctime), author, subject,
                               body.strip(), pairs))
    return found


def last_changed(root: Path, head: str, paths: Iterable[str]) -> dict[str, int]:
    """For each path, the committer time of the newest commit from ``head`` that touched
    it (one ``git log`` pass for all of them); paths never committed are left out."""
    wanted = set(paths)
    found: dict[str, int] = {}
    if not wanted:
        return found
    for commit in log(root, head, paths=sorted(wanted)):
        for _, path in commit.changes:
            if path in wanted and path not in found:
                found[path] = commit.time
        if len(found) == len(wanted):
            break
    return found


# --- file dates (created/updated: the author dates of the oldest and newest commits
# that changed a path, merge commits not walked), cached by commit ---------------

Dates = dict[str, tuple[str, str]]  # repo-relative path -> (created, updated)
_DATES_VERSION = 1


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


def _cache_file(repo: pygit2.Repository) -> Path | None:
    try:
        return private_dir(repo) / f"dates.v{_DATES_VERSION}"
    except PlantedLink:  # a folder planted there: no cache, only slower
        return None


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
    cache = _cache_file(repo) if use_cache else None
    cached = _load(cache) if cache is not None else None
    dates: Dates = {}
    stop = None
    if cached is not None:
        if cached[0] == str(head.id):
            return cached[1]
        if repo.descendant_of(head.id, pygit2.Oid(hex=cached[0])):
            dates, stop = cached[1], cached[0]
    _walk(repo, head, stop, dates)
    if cache is not None:
        with contextlib.suppress(OSError):  # a cache we cannot write is only slower next time
            write_atomic(cache, marshal.dumps((str(head.id), dates)))
    return dates
