"""The git binary, for what must go through git itself.

Some facts are only true as git computes them (ignore rules with every source of
excludes, the hooks directory after ``core.hooksPath`` and worktrees) and some actions
must run git's porcelain (a commit that fires the hooks, a push). This is the one
module of the layer that starts the program; everything else asks it, or goes through
pygit2 (:mod:`tropo.git.repo` opens the repository).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path


class GitError(RuntimeError):
    """git exited non-zero; the message is git's own last line."""


# The errors of finding a repository and a revision, here at the bottom of the layer so
# that a front end can catch them without loading the git bindings.

class NotARepository(Exception):
    """The path is not inside a git work tree."""


class RevisionError(ValueError):
    """A revision names no commit."""


def call(cwd: Path, *args: str, stdin: str | None = None,
         env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``git args`` in ``cwd`` and hand back its exit code, stdout and stderr without
    raising, for a caller that reads git's answer either way (a push names a lost lease
    on stdout and exits non-zero). ``env`` is set on top of this process's environment."""
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                          check=False, env={**os.environ, **env} if env is not None else None)


def call_bytes(git_dir: Path, *args: str, stdin: bytes = b"", env: Mapping[str, str] | None = None,
               capture: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run ``git --git-dir GIT_DIR args``, bytes in and out, without raising: for plumbing
    on a repository opened by path, whatever ``GIT_DIR`` a hook set. ``capture=False``
    sends the output nowhere, for a command that leaves a detached child behind (which
    would hold a captured pipe open)."""
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], input=stdin, stdout=out, stderr=out,
                          check=False, env={**os.environ, **env} if env is not None else None)


def output(git_dir: Path, *args: str, stdin: bytes = b"", env: Mapping[str, str] | None = None) -> bytes:
    """What :func:`call_bytes` prints, or :class:`GitError` with git's last line."""
    proc = call_bytes(git_dir, *args, stdin=stdin, env=env)
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0]} failed ({proc.returncode})")
    return proc.stdout


def run(cwd: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    """Run ``git args`` in ``cwd`` and return stdout."""
    proc = call(cwd, *args, stdin=stdin)
    if check and proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0]} failed ({proc.returncode})")
    return proc.stdout


def records(cwd: Path, *args: str) -> list[str]:
    """The NUL-separated records of a plumbing command (``-z``), paths undecoded bytes
    kept as surrogates. Listing through git itself costs C speed per entry."""
    return Started(cwd, *args).records()


class Started:
    """A plumbing command (``-z``) already running while this process does other work:
    ``git status`` walks every folder of the work tree (0.4-0.7 s at 20k documents), time
    a second core can spend beside a cold check's reading and parsing. The process is
    always waited for: :meth:`records` (or leaving the ``with`` block) reaps it."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self._what = args[0]
        self._proc = subprocess.Popen(["git", "--no-optional-locks", *args], cwd=cwd,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def records(self) -> list[str]:
        """What :func:`records` answers, once the command ends."""
        out, err = self._proc.communicate()
        if self._proc.returncode != 0:
            lines = err.decode("utf-8", "replace").strip().splitlines()
            raise GitError(lines[-1] if lines else f"git {self._what} failed ({self._proc.returncode})")
        return [r for r in out.decode("utf-8", "surrogateescape").split("\0") if r]

    def __enter__(self) -> Started:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.returncode is None:  # not asked: read to the end (a full pipe would block it)
            self._proc.communicate()


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


def ignored_outside(root: Path, paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` the top ``.gitignore`` of ``root`` ignores, for a folder that is
    not a repository yet (nested ``.gitignore`` files are not consulted)."""
    rules = root / ".gitignore"
    if rules.is_symlink() or not rules.is_file():
        return set()
    return ignored_by_rules({".gitignore": rules.read_bytes()}, paths)


def ignored_by_rules(rules: dict[str, bytes], paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` a tree holding only the ignore files ``rules`` (path ->
    bytes) would ignore: git itself judges, in a scratch repository (the user's own
    excludes are consulted too)."""
    import tempfile

    wanted = list(paths)
    if not wanted:
        return set()
    with tempfile.TemporaryDirectory(prefix="vivary-ignore-") as scratch:
        run(Path(scratch), "init", "-q")
        for rel, data in rules.items():
            dest = Path(scratch) / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        return ignored(Path(scratch), wanted, rules_only=True)


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


# --- Small questions the heartbeat asks (strato.heartbeat) ------------------------

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
