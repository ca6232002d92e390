"""Two eval runs paired task by task: each configuration's success rate and cost, the
difference in success rate with a bootstrap confidence interval over tasks (seeded, so
the same two runs always give the same interval), and the tasks that flipped. Runs of
different task sets are not compared: the refusal names what differs."""

from __future__ import annotations

import random
from statistics import fmean
from typing import Any

RESAMPLES = 2000
LEVEL = 0.95


class SetsDiffer(Exception):
    """The two runs did not run the same tasks (refused: exit 1)."""


def summary(config: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One run in numbers: success rate over all results, outcomes, mean costs."""
    outcomes: dict[str, int] = {}
    for r in rows:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    expected = len(config["set"]["tasks"]) * int(config["repeat"])

    def mean(key: str) -> float:
        return fmean(float(r[key]) for r in rows) if rows else 0.0

    return {
        "flow": config["flow"]["name"], "agent": config["agent"], "lanes": config["lanes"],
        "results": len(rows), "expected": expected, "complete": len(rows) >= expected,
        "successRate": mean("score"), "outcomes": outcomes,
        "tokensPerTask": mean("tokens"), "wallMsPerTask": mean("wallMs"),
        "attemptsPerTask": mean("attempts"), "verifierCallsPerTask": mean("verifierCalls"),
    }


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two runs' task sets (empty: the same tasks)."""
    ta, tb = a["set"]["tasks"], b["set"]["tasks"]
    out = []
    if only := sorted(set(ta) - set(tb)):
        out.append(f"only in A: {', '.join(only[:5])}{' ...' if len(only) > 5 else ''}")
    if only := sorted(set(tb) - set(ta)):
        out.append(f"only in B: {', '.join(only[:5])}{' ...' if len(only) > 5 else ''}")
    if changed := sorted(t for t in set(ta) & set(tb) if ta[t] != tb[t]):
        out.append(f"changed: {', '.join(changed[:5])}{' ...' if len(changed) > 5 else ''}")
    return out


def per_task(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Each task's mean score over its trials."""
    scores: dict[str, list[float]] = {}
    for r in rows:
        scores.setdefault(r["task"], []).append(float(r["score"]))
    return {t: fmean(s) for t, s in scores.items()}


def bootstrap(diffs: list[float], seed: int) -> tuple[float, float]:
    """The LEVEL percentile interval of the mean of ``diffs`` resampled with replacement."""
    if not diffs:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(fmean(rng.choices(diffs, k=n)) for _ in range(RESAMPLES))
    tail = (1 - LEVEL) / 2
    return means[int(tail * RESAMPLES)], means[min(RESAMPLES - 1, int((1 - tail) * RESAMPLES))]


def compare(a: tuple[str, dict[str, Any], list[dict[str, Any]]],
            b: tuple[str, dict[str, Any], list[dict[str, Any]]], seed: int = 0) -> dict[str, Any]:
    """The paired comparison of runs A and B, each (id, eval.json, results)."""
    (ida, ca, ra), (idb, cb, rb) = a, b
    if differs := _differences(ca, cb):
        raise SetsDiffer(f"{ida} and {idb} ran different task sets ({'; '.join(differs)})")
    sa, sb = per_task(ra), per_task(rb)
    paired = sorted(set(sa) & set(sb))
    diffs = [sb[t] - sa[t] for t in paired]
    low, high = bootstrap(diffs, seed)
    flipped = [{"task": t, "a": sa[t], "b": sb[t], "to": "pass" if sb[t] > sa[t] else "fail"}
               for t in paired if (sa[t] >= 0.5) != (sb[t] >= 0.5)]
    return {
        "a": {"id": ida, **summary(ca, ra)}, "b": {"id": idb, **summary(cb, rb)},
        "pairedTasks": len(paired),
        "difference": {"successRate": fmean(diffs) if diffs else 0.0, "ci": [low, high],
                       "level": LEVEL, "resamples": RESAMPLES, "seed": seed},
        "flipped": flipped,
        "perTask": [{"task": t, "a": sa[t], "b": sb[t]} for t in paired],
    }
