"""Memory lines: lessons the history itself records, each with its source trail.

A revert says "this did not work": the line names what was reverted and by which
commit. Memory is private (``MEMORY.md`` is ignored), so a memory proposal changes no
file: a person copies the line, and ``apply`` refuses to commit a private file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from strato.heartbeat.proposal import Proposal
from tropo.git.gitlog import LogCommit

_REVERT = re.compile(r'^Revert "(?P<subject>.+)"$')
_REVERTED = re.compile(r"This reverts commit (?P<oid>[0-9a-f]{7,40})")


def lessons(commits: Iterable[LogCommit]) -> list[Proposal]:
    found = []
    for commit in commits:
        match = _REVERT.match(commit.subject)
        if not match:
            continue
        target = _REVERTED.search(commit.body)
        trail = [f"commit {commit.oid}: {commit.subject}"]
        if target:
            trail.append(f"reverted commit {target.group('oid')}")
        found.append(Proposal(
            "memory", "memory", commit.oid,
            f"Reverted: {match.group('subject')} (did not hold; see {commit.oid[:12]})",
            tuple(trail)))
    return found
