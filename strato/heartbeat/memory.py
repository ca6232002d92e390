"""Memory lines: lessons the history itself records, each with its source trail.

Four sources say "this did not work, and here is what did": a revert (the commit and
what it reverted), a flow step that failed and then passed (the run's chain commits of
each attempt), a guard edge moved by a signed override instead of its evidence (the
ledger line), and a commit the pre-commit hook refused (the refusal recorded in the
private sidecar, see :mod:`strato.heartbeat.refusals`). Memory is private
(``MEMORY.md`` is ignored), so applying a memory proposal commits nothing: it adds the
line under ``## Lessons`` in the private file (:func:`with_lesson`). Every text taken from a source
the writer chose (a reason, a rationale, a hook's message) is redacted and kept to one
line, its hidden characters shown, so it can neither leak a key nor add lines or escape
sequences to the report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from strato.proposals.proposal import Proposal
from tropo import untrusted
from tropo.git.log import LogCommit
from tropo.redact import redact

_REVERT = re.compile(r'^Revert "(?P<subject>.+)"$')
_REVERTED = re.compile(r"This reverts commit (?P<oid>[0-9a-f]{7,40})")


LINE = 160  # the longest writer-chosen text a memory line quotes


def one_line(text: object, limit: int = LINE) -> str:
    """Writer-chosen text as one redacted line of at most ``limit`` characters, every
    hidden character shown (:func:`tropo.untrusted.line`)."""
    return untrusted.line(redact(str(text)), limit)


def lessons(commits: Iterable[LogCommit]) -> list[Proposal]:
    found = []
    for commit in commits:
        match = _REVERT.match(commit.subject)
        if not match:
            continue
        target = _REVERTED.search(commit.body)
        trail = [f"commit {commit.oid}: {one_line(commit.subject)}"]
        if target:
            trail.append(f"reverted commit {target.group('oid')}")
        found.append(Proposal(
            "memory", "memory", commit.oid,
            f"Reverted: {one_line(match.group('subject'))} (did not hold; see {commit.oid[:12]})",
            tuple(trail)))
    return found


def _results(transition: Mapping[str, Any]) -> Iterable[tuple[str, bool, object, object]]:
    """(step path, success, attempt, reason) of each step result a transition emitted."""
    events = transition.get("events")
    for event in events if isinstance(events, list) else []:
        if isinstance(event, dict) and event.get("type") == "result" and isinstance(event.get("stepId"), str):
            detail = event.get("detail")
            detail = detail if isinstance(detail, dict) else {}
            yield (one_line(event["stepId"], 120), detail.get("success") is True,
                   one_line(detail.get("attempt"), 20), detail.get("reason"))


def run_lessons(run_id: str, chain: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Proposal]:
    """A lesson per step of a run that failed and then passed; ``chain`` is the run's
    ``(commit, transition)`` list, oldest first (:meth:`strato.runs.store.RunStore.since`'s
    shape). The trail names the commit of every failed attempt and of the one that passed."""
    failed: dict[str, list[str]] = {}
    found = []
    for oid, transition in chain:
        for step, success, attempt, reason in _results(transition):
            if not success:
                failed.setdefault(step, []).append(
                    f"run {run_id} commit {oid}: {step} attempt {attempt} failed: {one_line(reason)}")
                continue
            misses = failed.pop(step, [])
            if not misses:
                continue
            last = misses[-1].split(" failed: ", 1)[1]
            found.append(Proposal(
                "memory", "run-retry", f"{run_id}/{step}",
                f"Flow run {run_id}: step {step} failed {len(misses)} time(s) before it passed "
                f"(last failure: {last})",
                (*misses, f"run {run_id} commit {oid}: {step} attempt {attempt} passed")))
    return found


def override_lessons(resource_id: str, entries: Iterable[Mapping[str, Any]]) -> list[Proposal]:
    """A lesson per signed override (a ``deviation`` entry) in a resource's ledger.

    The ledger is only folded here, not verified: the line is a private suggestion, and
    whether its signature holds is ``strato guard verify``'s to say (the trail names the
    entry so a person can check it)."""
    found = []
    for line, entry in enumerate(entries, start=1):
        if entry.get("kind") != "deviation":
            continue
        edge = f"{entry.get('from_state')}->{entry.get('to_state')}"
        found.append(Proposal(
            "memory", "guard-override", f"{resource_id}#{entry.get('entry_digest')}",
            f"Guard {one_line(resource_id, 80)}: edge {one_line(edge, 80)} was overridden, "
            f"not earned: {one_line(entry.get('rationale'))}",
            (f"guard ledger {one_line(resource_id, 80)} line {line}: "
             f"entry {one_line(entry.get('entry_digest'), 80)}",)))
    return found


MEMORY = "MEMORY.md"  # the private memory file at the workspace's top (git-ignored)
LESSONS = "## Lessons"
NEW_MEMORY = "# MEMORY (private: ignored by git)\n"


def with_lesson(text: str | None, line: str) -> str:
    """``text`` (MEMORY.md, None when there is none yet) with ``line`` as the last item of
    its ``## Lessons`` section (the section added at the end when missing); a line already
    there is not added twice, and nothing else in the file moves."""
    lines = (text if text is not None else NEW_MEMORY).splitlines()
    item = f"- {line}"
    if item in lines:
        return text if text is not None else NEW_MEMORY
    if LESSONS not in lines:
        lines += ["", LESSONS] if lines and lines[-1].strip() else [LESSONS]
    start = lines.index(LESSONS)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    new = ["", item] if end == start + 1 else [item]
    if end == start + 1 and end < len(lines) and lines[end].startswith("#"):
        new.append("")  # an empty section right before the next heading keeps its gap
    lines[end:end] = new
    return "\n".join(lines) + "\n"
