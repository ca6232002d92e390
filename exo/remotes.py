"""What a clone knows of its remotes, for the two places that must say so: a claim made
without one is local (two clones can both "win" it), and the board's claims of other
clones are only as fresh as the last fetch."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from exo.claims import default_remote
from tropo.git import remote as gitremote
from tropo.git.repo import workdir
from tropo.git.types import Repository


def _names(repo: Repository) -> list[str]:
    """The remotes the board reads: exo.remote when set, else every remote."""
    chosen = default_remote(repo)
    return [chosen] if chosen else gitremote.remote_names(workdir(repo))


def local_claim_note(repo: Repository) -> str | None:
    """The one line a claim made without a remote owes a clone that has one."""
    names = gitremote.remote_names(workdir(repo))
    if not names:
        return None
    name = "origin" if "origin" in names else names[0]
    return (f"this claim is local to this clone (another clone can claim the same item); "
            f"share it with --remote {name} or `git config exo.remote {name}`")


def refresh(repo: Repository) -> None:
    """Fetch what the board reads; raises :class:`tropo.git.gitremote.RemoteError`."""
    for name in _names(repo):
        gitremote.fetch(workdir(repo), name)


def freshness(repo: Repository) -> list[dict[str, str | None]]:
    """Each remote the board reads, with the time of its last fetch (UTC, ISO 8601)."""
    found = []
    for name in _names(repo):
        at = gitremote.last_fetch(workdir(repo), name)
        stamp = None if at is None else datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        found.append({"remote": name, "fetchedAt": stamp})
    return found


def as_text(remotes: list[dict[str, str | None]], now: float | None = None) -> list[str]:
    lines = []
    for r in remotes:
        at = r["fetchedAt"]
        when = "never fetched"
        if at is not None:
            then = datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
            minutes = int(((now or time.time()) - then) // 60)
            when = f"fetched {at.replace('T', ' ').rstrip('Z')} UTC ({_ago(minutes)})"
        lines.append(f"exo: claims from {r['remote']}: {when}; `exo board --fetch` refreshes")
    return lines


def _ago(minutes: int) -> str:
    if minutes < 1:
        return "just now"
    if minutes < 120:
        return f"{minutes} min ago"
    return f"{minutes // 60} h ago" if minutes < 48 * 60 else f"{minutes // (24 * 60)} days ago"
