"""What each commit changed against each of its parents, asked of git in one stream.

A check of a long history should read what each commit changed, never whole trees:
``git rev-list --parents`` lists the commits once, and one ``git diff-tree --stdin``
process compares every (commit, parent) pair, so the cost follows the changes, not the
size of the trees.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

import pygit2

from tropo.git.gitcli import GitError


@dataclass(frozen=True)
class Change:
    """One path that differs between a commit and a parent (``git diff-tree --raw``)."""

    path: str  # undecodable bytes kept as surrogates
    old: str  # the blob or tree before (zeros when added)
    new: str  # and after (zeros when deleted)
    status: str  # A, D, M, T, ... as git says


def _git(repo: pygit2.Repository, args: list[str], stdin: bytes = b"") -> bytes:
    argv = ["git", "--git-dir", repo.path, *args]
    proc = subprocess.run(argv, input=stdin, capture_output=True, check=False)
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0]} failed ({proc.returncode})")
    return proc.stdout


def graph(repo: pygit2.Repository, tip: str) -> list[list[str]]:
    """``[commit, *parents]`` for every commit reachable from ``tip``, children before
    their parents (``--topo-order``)."""
    out = _git(repo, ["rev-list", "--topo-order", "--parents", tip]).decode("ascii")
    return [line.split() for line in out.splitlines() if line]


def changes(repo: pygit2.Repository, pairs: list[tuple[str, str | None]]) -> list[list[Change]]:
    """For each ``(commit, parent)`` pair (parent None: against nothing, as for a root
    commit), every path that differs, subtrees walked (``-r``); one git process for all."""
    stdin = "".join(f"{c}\n" if p is None else f"{c} {p}\n" for c, p in pairs).encode()
    out = _git(repo, ["diff-tree", "--stdin", "--root", "--always", "-r", "-z"], stdin)
    tokens = out.decode("utf-8", "surrogateescape").split("\0")
    found: list[list[Change]] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith(":"):  # ":<old mode> <new mode> <old> <new> <status>", then the path
            _, _, old, new, status = token[1:].split(" ")
            found[-1].append(Change(tokens[i + 1], old, new, status))
            i += 2
            continue
        if token:  # the header git prints for each pair (--always: even when nothing differs)
            found.append([])
        i += 1
    if len(found) != len(pairs):
        raise GitError(f"git diff-tree answered {len(found)} of {len(pairs)} commit pairs")
    return found
