"""The ratchet: of a check's findings, only those an earlier revision did not have.

A repository adopted with old findings can then refuse what gets worse without fixing
the past first. A finding is "the same" when its path and code are: lines move with every
edit above them, and messages name what is broken, so within one (path, code) the count
decides. Two identical findings then and three now is one new finding; which one is
reported prefers a message the earlier revision did not have, then the last by line.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tropo.check.findings import Finding


def new_since(now: list[Finding], before: list[Finding]) -> list[Finding]:
    """The findings of ``now`` beyond those ``before`` had, per (path, code), in order."""
    had: Counter[tuple[str, str]] = Counter((f.path, f.code) for f in before)
    messages: Counter[tuple[str, str, str]] = Counter((f.path, f.code, f.message) for f in before)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(now):
        groups.setdefault((f.path, f.code), []).append(i)
    keep: set[int] = set()
    for key, members in groups.items():
        extra = len(members) - had[key]
        if extra <= 0:
            continue
        fresh, known = [], []
        seen = messages.copy()
        for i in members:
            triple = (*key, now[i].message)
            if seen[triple] > 0:
                seen[triple] -= 1
                known.append(i)
            else:
                fresh.append(i)
        keep.update((fresh + known[::-1])[:extra])
    return [f for i, f in enumerate(now) if i in keep]


def findings_at(start: Path | None, rev: str, *, use_cache: bool = True) -> list[Finding]:
    """The whole workspace's findings as commit ``rev`` records it; none when that
    revision has no workspace or a schema that cannot be read (then everything is new).
    A revision that does not exist raises :class:`tropo.git.gitcli.RevisionError`."""
    from tropo.check import incremental
    from tropo.check.roots import ConfigError
    from tropo.git.snapshot import Source

    try:
        return incremental.check(start, Source.at(rev), use_cache=use_cache).summary.findings
    except ConfigError:
        return []
