"""The workflow miner: which sequences of tool calls repeat, and which earned a skill.

A session's calls, in order, with immediate repeats collapsed (three ``Read`` in a row
are one step), give its workflows: every run of 2 to ``MAX_STEPS`` consecutive steps.
Occurrences are counted without overlap inside a session. The third-strike rule: a
workflow seen at least ``min_count`` (3) times across at least two sessions is a
candidate; first is exploration, second coincidence, third a pattern. Of nested
candidates only the longest that keeps the same support is kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from strato.distill.transcripts import Call

MAX_STEPS = 4
MIN_SESSIONS = 2


@dataclass(frozen=True)
class Workflow:
    steps: tuple[str, ...]
    occurrences: tuple[tuple[Call, ...], ...]  # the calls of each occurrence, in order

    @property
    def count(self) -> int:
        return len(self.occurrences)

    @property
    def sessions(self) -> int:
        return len({occ[0].session for occ in self.occurrences})


def sessions(calls: Iterable[Call], since: float | None = None) -> dict[str, list[Call]]:
    """Calls by session, in time order (then file order), repeats collapsed."""
    found: dict[str, list[Call]] = defaultdict(list)
    for call in calls:
        if since is None or call.time >= since:
            found[call.session].append(call)
    out = {}
    for name, mine in found.items():
        mine.sort(key=lambda c: c.time)
        collapsed = [c for i, c in enumerate(mine) if i == 0 or mine[i - 1].step != c.step]
        out[name] = collapsed
    return out


def workflows(by_session: dict[str, list[Call]]) -> list[Workflow]:
    """Every workflow with its non-overlapping occurrences, most frequent first."""
    seen: dict[tuple[str, ...], list[tuple[Call, ...]]] = defaultdict(list)
    for name in sorted(by_session):
        calls = by_session[name]
        for size in range(2, MAX_STEPS + 1):
            last_end: dict[tuple[str, ...], int] = {}
            for start in range(len(calls) - size + 1):
                window = tuple(calls[start:start + size])
                steps = tuple(c.step for c in window)
                if last_end.get(steps, -1) <= start:
                    seen[steps].append(window)
                    last_end[steps] = start + size
    found = [Workflow(steps, tuple(occ)) for steps, occ in seen.items()]
    return sorted(found, key=lambda w: (-w.count, -len(w.steps), w.steps))


def _inside(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    n = len(short)
    return any(long[i:i + n] == short for i in range(len(long) - n + 1))


def candidates(found: list[Workflow], min_count: int) -> list[Workflow]:
    """The third-strike workflows, nested ones folded into the longest."""
    strong = [w for w in found if w.count >= min_count and w.sessions >= MIN_SESSIONS]
    return [w for w in strong
            if not any(len(o.steps) > len(w.steps) and o.count >= w.count and _inside(w.steps, o.steps)
                       for o in strong)]
