"""Bug-risk playbook rows: when a *class* of bug is fixed twice, propose a row.

A commit is a fix by its message (a ``fix:``/``fix(scope):`` subject, a ``Fixes:`` trailer,
"fix"/"bug" as a word) or a revert. Its class is, in order: a ``Bug-Class:`` trailer, the
conventional-commit scope, else each source file it changed (tests excluded: they are the
prevention, not the bug). Fixes are indexed as commits arrive, so the two fixes of a
class may be far apart in history without re-reading it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TypedDict

from strato.proposals.proposal import Proposal
from tropo import untrusted
from tropo.git.log import LogCommit
from tropo.redact import redact

PLAYBOOK = "bug-risk-playbook.md"
_FIX_SUBJECT = re.compile(r"^(fix|bugfix|hotfix)(\((?P<scope>[^)]+)\))?!?:", re.IGNORECASE)
_FIX_WORD = re.compile(r"\b(fix(es|ed)?|bug)\b", re.IGNORECASE)
_TRAILER = re.compile(r"^(?P<key>[A-Za-z-]+):\s*(?P<value>.+)$", re.MULTILINE)
_TEST = re.compile(r"(^|/)(tests?|spec|__tests__)/|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(test|spec)\.[a-z]+$")

class Fix(TypedDict):
    oid: str
    subject: str
    tests: list[str]  # test files the fix added or changed


def trailers(body: str) -> dict[str, str]:
    return {m.group("key").lower(): m.group("value").strip() for m in _TRAILER.finditer(body)}


def is_test(path: str) -> bool:
    return bool(_TEST.search(path))


def is_fix(commit: LogCommit) -> bool:
    if commit.subject.startswith("Revert \"") or "fixes" in trailers(commit.body):
        return True
    return bool(_FIX_SUBJECT.match(commit.subject) or _FIX_WORD.search(commit.subject))


def classes(commit: LogCommit) -> list[str]:
    """The bug classes a fix commit speaks for."""
    explicit = trailers(commit.body).get("bug-class")
    if explicit:
        return [explicit.strip().lower()]
    match = _FIX_SUBJECT.match(commit.subject)
    if match and match.group("scope"):
        return [match.group("scope").strip().lower()]
    return sorted({path for status, path in commit.changes if status != "D" and not is_test(path)})


def index_fixes(index: dict[str, list[Fix]], commits: Iterable[LogCommit]) -> None:
    """Add the fix commits among ``commits`` to ``index`` (class -> fixes); a commit
    already indexed (a rerun after a crash) is not added twice."""
    for commit in commits:
        if len(commit.parents) > 1 or not is_fix(commit):
            continue
        tests = sorted(path for status, path in commit.changes if status != "D" and is_test(path))
        for name in classes(commit):
            fixes = index.setdefault(name, [])
            if all(f["oid"] != commit.oid for f in fixes):
                fixes.append({"oid": commit.oid, "subject": commit.subject, "tests": tests})


def _cell(text: str) -> str:
    """A table cell of a committed file: every hidden character shown, ``|`` escaped."""
    return untrusted.visible(text).replace("|", "\\|").strip()


def row(name: str, fixes: list[Fix]) -> str:
    """The table row: the class, its likely cause (what the fixes said: each subject, its
    author's, redacted on one line in a code span), a prevention."""
    subjects = "; ".join(untrusted.code_span(untrusted.line(redact(f["subject"]))) for f in fixes[:3])
    tests = sorted({t for f in fixes for t in f["tests"]})
    prevention = (f"keep the regression tests {', '.join(tests)} and add one with every fix here"
                  if tests else f"add a regression test for {name} with the next fix")
    return f"| {_cell(name)} fixed {len(fixes)} times | {_cell(subjects)} | {_cell(prevention)} |"


def proposals(index: Mapping[str, list[Fix]], playbook: str | None, head: str | None,
              repeats: int) -> list[Proposal]:
    """One proposal per class fixed at least ``repeats`` times and not yet in the
    playbook; applying it appends the row to ``bug-risk-playbook.md``."""
    found = []
    current = playbook if playbook is not None else (
        "# Bug-risk playbook\n\nA row is added when a class of bug has bitten twice.\n\n"
        "| Bug | Likely cause | Prevention |\n| --- | --- | --- |\n")
    for name, fixes in sorted(index.items()):
        if len(fixes) < repeats or f"| {_cell(name)} " in current:
            continue
        line = row(name, fixes)
        text = current if current.endswith("\n") else current + "\n"
        found.append(Proposal(
            "playbook", "playbook", name, f"{name}: a class of bug fixed {len(fixes)} times",
            tuple(f"commit {f['oid']}: {f['subject']}" for f in fixes),
            {PLAYBOOK: text + line + "\n"}, head))
    return found
