"""The light heartbeat's hygiene checks that the repository alone can answer.

Each check is a pure function from facts (graph nodes, file times from one ``git log``
pass, branch tips, file texts) to proposals, so each is tested on its own case and on a
clean workspace. None of them proposes a file change: a person decides what to do.
"""

from __future__ import annotations

import datetime
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from strato.proposals.proposal import Proposal
from tropo.git.refs import BranchTip

DAY = 86400
CADENCE_DAYS = {"daily": 1, "weekly": 7}  # session-end, milestone, manual, disabled: no age


@dataclass(frozen=True)
class Item:
    """A graph node as the checks need it."""

    id: str
    type: str | None
    path: str
    status: str | None
    inbound: int


def _days(seconds: float) -> int:
    return int(seconds // DAY)


def _date(when: float) -> str:
    """A UTC day: evidence must not change while nothing happens (a new revision would)."""
    return datetime.datetime.fromtimestamp(when, datetime.UTC).date().isoformat()


def stale_items(items: Iterable[Item], touched: Mapping[str, int], now: float,
                days: int) -> list[Proposal]:
    """Active work items whose file no commit touched for ``days`` days."""
    found = []
    for item in items:
        when = touched.get(item.path)
        if item.status == "active" and when is not None and now - when >= days * DAY:
            found.append(Proposal(
                "hygiene", "stale", item.path,
                f"{item.id} is active but untouched for {_days(now - when)} days: close, defer or resume it",
                (f"{item.path}: last commit on {_date(when)}",)))
    return found


def orphans(items: Iterable[Item]) -> list[Proposal]:
    """Typed nodes nothing links to (an index page is a root, never an orphan)."""
    return [Proposal("hygiene", "orphan", item.path,
                     f"{item.id} ({item.type}) has no inbound link: link it from an index or archive it",
                     (f"{item.path}: 0 inbound edges",))
            for item in items
            if item.type is not None and item.inbound == 0
            and item.path.rsplit("/", 1)[-1].lower() not in ("readme.md", "index.md", "_index.md")]


def broken_refs(broken: Iterable[tuple[str, str, str]], known: set[str]) -> list[Proposal]:
    """Broken refs ``(path, field, target)`` not present at the last heartbeat."""
    found = []
    for path, field, target in broken:
        subject = f"{path}:{field}:{target}"
        if subject not in known:
            found.append(Proposal("hygiene", "broken-ref", subject,
                                  f"{path} links {field} -> {target}, which does not exist",
                                  (subject,)))
    return found


def claim_branches(tips: Iterable[BranchTip], merged: set[str], now: float,
                   days: int) -> list[Proposal]:
    """Claim branches already merged into HEAD, or with no commit for ``days`` days."""
    found = []
    for tip in tips:
        if tip.name in merged:
            found.append(Proposal("hygiene", "claim-merged", tip.name,
                                  f"{tip.name} is merged: release it (`exo release`)",
                                  (f"{tip.name} at {tip.oid[:12]} is reachable from HEAD",)))
        elif now - tip.time >= days * DAY:
            found.append(Proposal("hygiene", "claim-idle", tip.name,
                                  f"{tip.name} has had no commit for {_days(now - tip.time)} days",
                                  (f"{tip.name} at {tip.oid[:12]}",)))
    return found


def waiting_gates(state: object, path: str = "") -> Iterable[str]:
    """Step paths of a run's state (``run.json``) that wait at a gate, at any depth."""
    if isinstance(state, dict):
        for key, value in state.items():
            if isinstance(value, dict) and value.get("status") == "waiting_gate":
                yield f"{path}{key}"
            yield from waiting_gates(value, f"{path}{key}/" if key not in ("steps", "scope", "sub") else path)
    elif isinstance(state, list):
        for item in state:
            yield from waiting_gates(item, path)


def gate_waits(runs: Iterable[tuple[str, int, list[str]]], now: float, hours: int) -> list[Proposal]:
    """Runs ``(run id, time of the last transition, waiting steps)`` that have waited at
    a gate for ``hours`` or more: a person's decision is overdue."""
    found = []
    for run_id, since, steps in runs:
        if steps and now - since >= hours * 3600:
            found.append(Proposal("hygiene", "gate-wait", run_id,
                                  f"run {run_id} has waited {int((now - since) // 3600)} h at "
                                  f"{', '.join(steps)}: approve, revise or kill it",
                                  (f"refs/vivary/runs/{run_id}/head last moved on {_date(since)}",)))
    return found


def guard_stuck(resources: Iterable[tuple[str, str, bool, int]], now: float,
                days: int) -> list[Proposal]:
    """Guard resources ``(id, current state, state is terminal, last entry ms)`` left in
    a non-terminal state with no ledger entry for ``days`` days."""
    found = []
    for rid, state, terminal, last_ms in resources:
        since = last_ms / 1000
        if not terminal and now - since >= days * DAY:
            found.append(Proposal("hygiene", "guard-stuck", rid,
                                  f"guard resource {rid} has been {state!r} for {_days(now - since)} days",
                                  (f"{rid}: state {state}, last ledger entry on {_date(since)}",)))
    return found


def cadence(text: str) -> str:
    """The ``Cadence:`` a STATE.md declares (default ``daily``)."""
    match = re.search(r"^Cadence:\s*([A-Za-z-]+)", text, re.MULTILINE)
    return match.group(1).lower() if match else "daily"


def state_age(text: str | None, state_time: int | None, newest: int | None) -> list[Proposal]:
    """STATE.md older than its cadence while work went on: commits newer than the
    cadence allows landed after STATE.md last changed."""
    if text is None or state_time is None or newest is None:
        return []
    period = CADENCE_DAYS.get(cadence(text))
    if period is None or newest - state_time < period * DAY:
        return []
    behind = _days(newest - state_time)
    return [Proposal("hygiene", "state-age", "STATE.md",
                     f"STATE.md is {behind} days behind the work (cadence {cadence(text)}): update it",
                     (f"STATE.md last committed on {_date(state_time)}",))]


def tokens(text: str) -> int:
    """A model-free token estimate: about four characters per token."""
    return (len(text) + 3) // 4


def strato_budget(text: str | None, budget: int) -> list[Proposal]:
    """The always-on STRATO.md over its token budget (it must stay tiny to load)."""
    if text is None or tokens(text) <= budget:
        return []
    return [Proposal("hygiene", "strato-budget", "STRATO.md",
                     f"STRATO.md is ~{tokens(text)} tokens, over its budget of {budget}: move detail "
                     "into modules/ and link it",
                     (f"STRATO.md: {len(text)} characters",))]


_WORD = re.compile(r"\w+")
SHINGLE = 3
SIMILAR = 0.7  # one changed word in a 25-word paragraph keeps it near 0.78


def _paragraphs(text: str, min_chars: int) -> Iterable[str]:
    for block in re.split(r"\n\s*\n", text):
        if len(block) >= min_chars and not block.lstrip().startswith(("---", "|", "```")):
            yield block


def _shingles(words: list[str]) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(words[i:i + SHINGLE]) for i in range(max(1, len(words) - SHINGLE + 1)))


SKILL_MIRRORS = (".claude/skills/", ".agents/skills/")  # one skill, two folders, by design


def _mirrors(a: str, b: str) -> bool:
    """The same skill file in both skill folders: a copy the suite asks for, not a twin."""
    rest = {p.removeprefix(root) for p in (a, b) for root in SKILL_MIRRORS if p.startswith(root)}
    return len(rest) == 1 and a != b and all(p.startswith(SKILL_MIRRORS) for p in (a, b))


def duplicates(texts: Mapping[str, str], min_chars: int) -> list[Proposal]:
    """Near-duplicate paragraphs in two documents (one fact, one owner).

    Similarity is the Jaccard index of word 3-shingles; only paragraphs that share a
    shingle are compared (an inverted index), so unrelated text costs nothing."""
    paras: list[tuple[str, frozenset[tuple[str, ...]]]] = []
    index: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for path in sorted(texts):
        for block in _paragraphs(texts[path], min_chars):
            shingles = _shingles(_WORD.findall(block.lower()))
            for s in shingles:
                index[s].append(len(paras))
            paras.append((path, shingles))
    found: dict[tuple[str, str], float] = {}
    for i, (path, shingles) in enumerate(paras):
        shared: dict[int, int] = defaultdict(int)
        for s in shingles:
            for j in index[s]:
                if j > i and paras[j][0] != path:
                    shared[j] += 1
        for j, common in shared.items():
            other = paras[j][1]
            score = common / len(shingles | other)
            key = (path, paras[j][0])
            if score >= SIMILAR and score > found.get(key, 0.0) and not _mirrors(*key):
                found[key] = score
    return [Proposal("hygiene", "duplicate", f"{a}|{b}",
                     f"{a} and {b} repeat a paragraph: keep it in one and link from the other",
                     (f"{a} ~ {b}: {score:.0%} similar",))
            for (a, b), score in sorted(found.items())]
