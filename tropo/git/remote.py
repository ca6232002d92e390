"""Pushing and fetching single refs with compare-and-swap semantics.

A push that must create a ref (or move it from a known value) is git's distributed
mutex: the remote locks the ref and checks the lease, so of many concurrent pushers
exactly one wins. This runs the real ``git`` binary (through :mod:`tropo.git.gitcli`,
the one door to it), so every transport git supports (local paths, ssh, https) and every
credential set-up works unchanged. The remote always follows ``--``, so a name such as
``--upload-pack=...`` is a (missing) remote, never an option.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tropo.git import gitcli

if TYPE_CHECKING:
    import subprocess


@dataclass(frozen=True)
class RefUpdate:
    """One line of what git tells a pre-push hook: a local ref going to a remote one."""

    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str


@dataclass(frozen=True)
class Push:
    """A push about to happen, as the pre-push checks (hooks, strato's guard) see it:
    named here, below both, so a check needs no import from the hook that runs it."""

    root: Path
    remote: str
    url: str
    updates: tuple[RefUpdate, ...]


class RemoteError(Exception):
    """The remote could not be reached or talked to (not a lost race)."""


@dataclass(frozen=True)
class PushResult:
    """How the remote answered a one-ref push."""

    ok: bool
    rejected: bool  # the remote refused the update: the lease no longer holds
    detail: str
    # the remote itself refused it whatever the lease (a hook, a protected ref, no rights):
    # pushing again from a fresh fetch will not help
    denied: bool = False


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Never prompt for credentials: a claim must fail fast, not hang on a tty.
    return gitcli.call(cwd, *args, env={"GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": os.environ.get(
        "GIT_SSH_COMMAND", "ssh -o BatchMode=yes")})


def _status_line(stdout: str, dst: str) -> tuple[str, str] | None:
    """The porcelain (flag, summary) git printed for ``dst``, if any."""
    for line in stdout.splitlines():
        fields = line.split("\t")
        if len(fields) >= 3 and fields[1].endswith(f":{dst}"):
            return fields[0], fields[2]
    return None


# what the remote says when another push holds the ref right now: a lost race, not a refusal
_BUSY = ("lock", "failed to update ref", "incorrect old value", "atomic")


def _denied(summary: str) -> bool:
    """The remote refused an update for a reason of its own (a hook, a protected ref, no
    rights), not because a concurrent push was writing the same ref."""
    return summary.startswith("[remote rejected]") and not any(word in summary for word in _BUSY)


def push_ref(
    cwd: Path, remote: str, src: str | None, dst: str, expect: str | None
) -> PushResult:
    """Push ``src`` (None deletes) to ``dst`` on ``remote`` only if the remote ref is
    still ``expect`` (None: it must not exist yet).

    Hooks are skipped (``--no-verify``): this is a single coordination ref, and a
    pre-push hook that pushes such refs along must not recurse into itself.
    """
    return push_refs(cwd, remote, [(src, dst, expect)])


def push_refs(
    cwd: Path, remote: str, updates: list[tuple[str | None, str, str | None]]
) -> PushResult:
    """Push every ``(src, dst, expect)`` of ``updates`` as :func:`push_ref` does, all or
    none (``--atomic``): one lease that no longer holds rejects the whole push."""
    leases = [f"--force-with-lease={dst}:{expect or ''}" for _, dst, expect in updates]
    specs = [f"{src or ''}:{dst}" for src, dst, _ in updates]
    atomic = ["--atomic"] if len(updates) > 1 else []
    proc = _git(cwd, "push", "--porcelain", "--no-verify", *atomic, *leases, "--", remote,
                *specs)
    statuses = [_status_line(proc.stdout, dst) for _, dst, _ in updates]
    if any(status is None for status in statuses):
        message = (proc.stderr.strip().splitlines() or ["push failed"])[-1]
        raise RemoteError(f"cannot push to {remote!r}: {message}")
    for status in statuses:
        assert status is not None
        if status[0] == "!":
            denied = next((s[1] for s in statuses if s and _denied(s[1])), None)
            return PushResult(ok=False, rejected=True, detail=denied or status[1], denied=denied is not None)
    summary = statuses[0][1] if statuses[0] else ""
    return PushResult(ok=proc.returncode == 0, rejected=False, detail=summary)


def remote_oid(cwd: Path, remote: str, ref: str) -> str | None:
    """What ``ref`` points at on ``remote`` right now, or None when it is absent."""
    proc = _git(cwd, "ls-remote", "--refs", "--", remote, ref)
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or ["ls-remote failed"])[-1]
        raise RemoteError(f"cannot read {remote!r}: {message}")
    for line in proc.stdout.splitlines():
        oid, _, name = line.partition("\t")
        if name == ref:
            return oid
    return None


def fetch_objects(cwd: Path, remote: str, ref: str) -> None:
    """Fetch what ``ref`` on ``remote`` points at, writing no ref (not even FETCH_HEAD, nor
    the configured refspecs' opportunistic updates: ``--refmap=``), so its history can be
    compared with local commits without moving any."""
    proc = _git(cwd, "fetch", "--no-tags", "--no-write-fetch-head", "--refmap=", "--quiet", "--", remote,
                ref)
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or ["fetch failed"])[-1]
        raise RemoteError(f"cannot fetch {ref} from {remote!r}: {message}")


def fetch_ref(cwd: Path, remote: str, ref: str, into: str) -> str | None:
    """Fetch ``ref`` from ``remote`` into the local ref ``into`` (forced: it mirrors the
    remote). Returns the fetched oid, or None when the remote has no such ref."""
    if remote_oid(cwd, remote, ref) is None:
        return None
    proc = _git(cwd, "fetch", "--no-tags", "--quiet", "--", remote, f"+{ref}:{into}")
    if proc.returncode != 0:
        if remote_oid(cwd, remote, ref) is None:  # deleted in between
            return None
        message = (proc.stderr.strip().splitlines() or ["fetch failed"])[-1]
        raise RemoteError(f"cannot fetch from {remote!r}: {message}")
    out = _git(cwd, "rev-parse", "--verify", "--quiet", into)
    return out.stdout.strip() or None


def mirror(cwd: Path, remote: str, prefix: str, *, prune: bool = True) -> None:
    """Make the local refs under ``prefix`` what ``remote`` has there (forced: a mirror of
    refs only the remote's side writes, such as other branches' pinned notes);
    ``prune=False`` keeps local refs the remote lacks (a run's local checkpoints)."""
    pruning = ["--prune"] if prune else []
    proc = _git(cwd, "fetch", "--no-tags", "--quiet", *pruning, "--no-write-fetch-head", "--", remote,
                f"+{prefix}*:{prefix}*")
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or ["fetch failed"]
        message = next((line for line in lines if line.startswith("fatal:")), lines[-1])
        raise RemoteError(f"cannot fetch {prefix}* from {remote!r}: {message}")


def fetch_refs(cwd: Path, remote: str, refs: list[str], have: list[str] | None = None) -> None:
    """Make each of ``refs`` (all on ``remote``) what the remote has (forced), and no
    other: a few refs fetched, where :func:`mirror` lists every ref under a prefix.
    ``have``: the local refs (each must exist here) whose histories alone are offered as
    common ground (``--negotiation-tip``), so the talk is as short as they are few;
    None offers every ref's, as a plain fetch does."""
    tips = [f"--negotiation-tip={ref}" for ref in have or []]
    proc = _git(cwd, "fetch", "--no-tags", "--quiet", "--no-write-fetch-head", *tips, "--", remote,
                *(f"+{ref}:{ref}" for ref in refs))
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or ["fetch failed"]
        message = next((line for line in lines if line.startswith("fatal:")), lines[-1])
        raise RemoteError(f"cannot fetch {', '.join(refs)} from {remote!r}: {message}")


def remote_names(cwd: Path) -> list[str]:
    """The remotes this clone knows (``git remote``)."""
    return gitcli.run(cwd, "remote").split()


def fetch(cwd: Path, remote: str) -> None:
    """Refresh the remote-tracking refs of ``remote`` (what the board reads)."""
    proc = _git(cwd, "fetch", "--quiet", "--", remote)
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or ["fetch failed"])[-1]
        raise RemoteError(f"cannot fetch from {remote!r}: {message}")


def last_fetch(cwd: Path, remote: str) -> float | None:
    """When this clone last heard from ``remote`` (seconds since the epoch), None if never:
    the newest of FETCH_HEAD's mtime (any fetch writes it), the reflogs of the remote's
    tracking refs, and the clone itself (HEAD's reflog: a clone writes no FETCH_HEAD)."""
    where = gitcli.run(cwd, "rev-parse", "--path-format=absolute", "--git-path", "FETCH_HEAD")
    fetch_head = Path(where.strip())
    times = [fetch_head.stat().st_mtime] if fetch_head.is_file() else []
    tracking = gitcli.run(cwd, "for-each-ref", "--format=%(refname)", f"refs/remotes/{remote}/").split()
    for ref in [*tracking, "HEAD"]:
        proc = gitcli.call(cwd, "log", "-g", "--date=unix", "--format=%gd %gs", ref)
        for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
            selector, _, message = line.partition(" ")
            stamp = selector.rpartition("@{")[2].rstrip("}")
            if stamp.isdigit() and (ref != "HEAD" or message.startswith("clone: ")):
                times.append(float(stamp))
    return max(times, default=None)
