"""Refused commits: the pre-commit hook's refusals, remembered until a commit gets through.

A refusal leaves nothing in git (that is its point), so the hook records it here, in
the private sidecar (``.git/vivary/heartbeat/refusals.jsonl``, never tracked, never
pushed): when, on which HEAD, and the first findings. The heartbeat pairs a refusal
with the commit that later went through on the same parent (the fix) and proposes a
memory line with both ends of the trail. Recording never fails the hook: a refusal
that cannot be written is only a lesson lost.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from strato.heartbeat import memory
from strato.proposals import store
from strato.proposals.proposal import Proposal, digest
from tropo.git import gitcli
from tropo.git.log import LogCommit

FILE = "refusals.jsonl"
KEEP = 100  # the newest refusals kept; older ones are paired already or never will be
MAX_FINDINGS = 5


def record(root: Path, findings: Sequence[str], now: float | None = None) -> None:
    """Append one refusal of a commit on the current HEAD (called by the pre-commit hook)."""
    try:
        side = store.sidecar(root)
        entry = {"at": int(time.time() if now is None else now), "head": gitcli.head_oid(root),
                 "findings": [memory.one_line(f, 200) for f in findings[:MAX_FINDINGS]]}
        side.mkdir(parents=True, exist_ok=True)
        path = side / FILE
        lines = [*_lines(path)[-(KEEP - 1):], json.dumps(entry, sort_keys=True)]
        tmp = path.with_name(f".{FILE}.{os.getpid()}")
        tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        os.replace(tmp, path)
    except (OSError, gitcli.GitError):
        return


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError):
        return []


def load(side: Path) -> list[dict[str, Any]]:
    """The recorded refusals, oldest first; a line that is not one is skipped."""
    found = []
    for line in _lines(side / FILE):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("findings"), list):
            found.append(entry)
    return found


def lessons(refused: Iterable[dict[str, Any]], commits: Iterable[LogCommit]) -> list[Proposal]:
    """A memory line per refusal followed by a commit on the same parent (the root
    commit pairs with a refusal on an unborn HEAD)."""
    by_parent: dict[str | None, LogCommit] = {}
    for commit in commits:  # newest first: the oldest commit on each parent wins
        by_parent[commit.parents[0] if commit.parents else None] = commit
    found = []
    for entry in refused:
        head = entry.get("head") if isinstance(entry.get("head"), str) else None
        fix = by_parent.get(head)
        if fix is None:
            continue  # not fixed yet: a later run pairs it
        findings = [memory.one_line(f, 200) for f in entry["findings"][:MAX_FINDINGS]]
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(entry.get("at") or 0)))
        first = findings[0] if findings else "no finding recorded"
        found.append(Proposal(
            "memory", "refused-commit", digest([entry.get("at"), head, findings]),
            f"A commit was refused ({first}); {fix.oid[:12]} went through after the fix",
            (*(f"pre-commit refusal at {when} on HEAD {head or '(no commits)'}: {f}" for f in findings),
             f"commit {fix.oid}: {memory.one_line(fix.subject)}")))
    return found
