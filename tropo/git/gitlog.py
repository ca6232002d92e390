"""History read in one pass, and commits built from trees: the heartbeat's git layer.

One ``git log`` answers "what happened since REV" for every file at once (never one
call per file), and a commit an applied proposal becomes is built in a private index
file, so the person's branch, index and working tree are never touched. Kept apart
from :mod:`tropo.git.gitcli` so the hooks that import that module do not pay for this one.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tropo.git.gitcli import GitError, records, run

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
    out = run(root, *args)
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


@dataclass(frozen=True)
class BranchTip:
    name: str  # ``claim/x`` from :func:`branches`, a full ref name from :func:`ref_tips`
    oid: str
    time: int  # committer time of the tip


def ref_tips(root: Path, prefix: str) -> list[BranchTip]:
    """Refs under ``prefix`` (e.g. ``refs/vivary/runs/``), full names, with their tips."""
    out = run(root, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(committerdate:unix)", prefix)
    tips = []
    for line in out.splitlines():
        name, oid, ctime = line.split("\0")
        tips.append(BranchTip(name, oid, int(ctime or 0)))
    return tips


def branches(root: Path, prefix: str) -> list[BranchTip]:
    """Local branches under ``prefix`` (e.g. ``claim/``) with their tips, short names."""
    return [BranchTip(t.name.removeprefix("refs/heads/"), t.oid, t.time)
            for t in ref_tips(root, f"refs/heads/{prefix}")]


def is_ancestor(root: Path, ancestor: str, descendant: str) -> bool:
    """Whether ``ancestor`` is reachable from ``descendant`` (a merged branch)."""
    proc = subprocess.run(["git", "merge-base", "--is-ancestor", ancestor, descendant], cwd=root,
                          capture_output=True, check=False)
    return proc.returncode == 0


def commit_files(root: Path, parent: str, files: dict[str, bytes], message: str) -> str:
    """A new commit: ``parent``'s tree with ``files`` (path -> content) written over it.

    Built in a throwaway index file, so HEAD, the index and the working tree are left
    exactly as they were."""
    with tempfile.TemporaryDirectory(prefix="vivary-index-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}

        def git(*args: str, data: bytes | None = None) -> str:
            proc = subprocess.run(["git", *args], cwd=root, env=env, input=data,
                                  capture_output=True, check=False)
            if proc.returncode != 0:
                lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
                raise GitError(lines[-1] if lines else f"git {args[0]} failed")
            return proc.stdout.decode().strip()

        git("read-tree", parent)
        for path, data in sorted(files.items()):
            blob = git("hash-object", "-w", "--stdin", data=data)
            git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
        tree = git("write-tree")
        return git("commit-tree", tree, "-p", parent, "-F", "-", data=message.encode())


def tree_files(root: Path, rev: str, suffixes: tuple[str, ...] = ()) -> dict[str, str]:
    """Files of ``rev``'s tree (path -> blob id), optionally only those ending in
    ``suffixes``; one ``ls-tree`` call."""
    found: dict[str, str] = {}
    for record in records(root, "ls-tree", "-r", "-z", "--full-tree", rev):
        meta, _, path = record.partition("\t")
        kind, oid = meta.split()[1:3]
        if kind == "blob" and (not suffixes or path.endswith(suffixes)):
            found[path] = oid
    return found


def notes(root: Path, ref: str) -> list[tuple[str, str]]:
    """Every note on ``ref`` as ``(note blob, annotated object)``; none if the ref is absent."""
    out = run(root, "notes", f"--ref={ref}", "list", check=False)
    return [(parts[0], parts[1]) for parts in (line.split() for line in out.splitlines()) if len(parts) == 2]
