"""The git binary, for what must go through git itself.

Some facts are only true as git computes them (ignore rules with every source of
excludes, the hooks directory after ``core.hooksPath`` and worktrees) and some actions
must run git's porcelain (a commit that fires the hooks, a push). Everything else
goes through pygit2 in :mod:`tropo.repo`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


class GitError(RuntimeError):
    """git exited non-zero; the message is git's own last line."""


def run(cwd: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    """Run ``git args`` in ``cwd`` and return stdout."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0]} failed ({proc.returncode})")
    return proc.stdout


def records(cwd: Path, *args: str) -> list[str]:
    """The NUL-separated records of a plumbing command (``-z``), paths undecoded bytes
    kept as surrogates. Listing through git itself costs C speed per entry."""
    proc = subprocess.run(["git", "--no-optional-locks", *args], cwd=cwd, capture_output=True,
                          check=False)
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0]} failed ({proc.returncode})")
    return [r for r in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if r]


def blobs(cwd: Path, oids: Iterable[str]) -> dict[str, bytes]:
    """Many blobs through one ``git cat-file --batch``; one that is missing (or is no
    blob) is left out."""
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    proc = subprocess.run(["git", "cat-file", "--batch"], cwd=cwd, capture_output=True, check=False,
                          input="".join(f"{oid}\n" for oid in wanted).encode())
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(lines[-1] if lines else "git cat-file failed")
    out, pos, found = proc.stdout, 0, {}
    for oid in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        pos = end + 1
        if len(header) == 3:  # "<oid> <type> <size>", else "<oid> missing"
            size = int(header[2])
            if header[1] == b"blob":
                found[oid] = out[pos:pos + size]
            pos += size + 1
    return found


def toplevel(cwd: Path) -> Path | None:
    """The work tree root containing ``cwd``, or None outside a work tree."""
    proc = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    return Path(proc.stdout.strip()) if proc.returncode == 0 else None


def hooks_dir(root: Path) -> Path:
    """Where git looks for hooks: honours ``core.hooksPath`` and linked worktrees."""
    return (root / run(root, "rev-parse", "--git-path", "hooks").strip()).resolve()


def ignored(root: Path, paths: Iterable[str], *, rules_only: bool = False) -> set[str]:
    """Which of ``paths`` (relative, posix) git would ignore; a tracked path never is,
    unless ``rules_only`` asks only whether an ignore rule matches."""
    wanted = list(paths)
    if not wanted:
        return set()
    flags = ["--no-index"] if rules_only else []
    stdin = "\0".join(wanted) + "\0"
    out = run(root, "check-ignore", *flags, "--stdin", "-z", stdin=stdin, check=False)
    return {p for p in out.split("\0") if p}


def tracked(root: Path, paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` are in the index."""
    wanted = list(paths)
    if not wanted:
        return set()
    out = run(root, "ls-files", "-z", "--", *wanted)
    return {p for p in out.split("\0") if p}


def has_identity(root: Path) -> bool:
    """Whether git can name an author here without guessing."""
    return bool(run(root, "config", "user.email", check=False).strip())


def init(root: Path) -> None:
    """``git init`` (the user's init.defaultBranch and templates apply)."""
    run(root, "init", "-q")


# --- History and branch questions the heartbeat asks (strato.heartbeat) -------------
# One ``git log`` pass answers "what happened since REV" for every file at once, and
# the commit an applied proposal becomes is built from trees in a private index, so the
# person's branch, index and working tree are never touched.

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


def head_oid(root: Path) -> str | None:
    """The commit HEAD names, or None in a repository with no commits yet."""
    out = run(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).strip()
    return out or None


def is_commit(root: Path, rev: str) -> str | None:
    """The full id of the commit ``rev`` names, or None if it names none."""
    if rev.startswith("-"):
        return None
    out = run(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
              check=False).strip()
    return out or None


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
    name: str  # short name, e.g. ``claim/x``
    oid: str
    time: int  # committer time of the tip


def branches(root: Path, prefix: str) -> list[BranchTip]:
    """Local branches under ``prefix`` (e.g. ``claim/``) with their tips."""
    out = run(root, "for-each-ref", "--format=%(refname:short)%00%(objectname)%00%(committerdate:unix)",
              f"refs/heads/{prefix}")
    tips = []
    for line in out.splitlines():
        name, oid, ctime = line.split("\0")
        tips.append(BranchTip(name, oid, int(ctime or 0)))
    return tips


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


def create_ref(root: Path, ref: str, oid: str) -> bool:
    """Create ``ref`` at ``oid`` only if it does not exist yet (git's mutex); False if
    it already exists."""
    proc = subprocess.run(["git", "update-ref", "--no-deref", ref, oid, ""], cwd=root,
                          capture_output=True, check=False)
    return proc.returncode == 0


def config_matching(root: Path, pattern: str) -> dict[str, str]:
    """Config keys matching ``pattern`` (a regex) with their last value, in one call,
    as git resolves them (system, then user, then repository: the last one wins)."""
    out = run(root, "config", "-z", "--get-regexp", pattern, check=False)
    found: dict[str, str] = {}
    for record in out.split("\0"):
        if record:
            key, _, value = record.partition("\n")
            found[key] = value
    return found


def git_dir(root: Path) -> Path:
    """The repository's private directory (``.git``, or a linked worktree's common one)."""
    return (root / run(root, "rev-parse", "--git-common-dir").strip()).resolve()


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
