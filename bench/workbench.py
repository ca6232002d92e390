"""The workbench stays responsive on big repositories: 1,000 runs and a 10,000-event run.

Times the two views a page opens, through `workbench.repo.RepoSource` (what the API
routes call), each against a baseline measured in the same process: the runs list of a
1,000-run repository against one of 10 runs, and a page of a 10,000-event run against a
12-event run. Paging is the promise: a page costs about the same whatever the total,
and its size stays bounded. Prints a table of medians and ratios.

    nice -n 19 python -m bench.workbench
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.demo_flows import SPEC  # a draft step, then a human gate
from strato.runs.service import Runs
from workbench.repo import RepoSource

EVENTS_PER_COMMIT = 10


def repository(where: Path, runs: int) -> Path:
    where.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(where)], check=True)
    subprocess.run(["git", "-C", str(where), "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    store = Runs(where)
    for n in range(runs):
        store.plan(SPEC, {"topic": f"t{n}"}, f"run-{n:04d}")
    return where


def lengthen(root: Path, run_id: str, events: int) -> None:
    """Give the run a history of ``events`` more events (commits of `EVENTS_PER_COMMIT`
    each, the state unchanged): the history walk is what a long run costs."""
    runs = Runs(root)
    snap = runs.store.load(run_id)
    for n in range(events // EVENTS_PER_COMMIT):
        batch = [{"at": "2026-01-01T00:00:00.000Z", "type": "ready", "stepId": "draft",
                  "detail": {"attempt": n * EVENTS_PER_COMMIT + i}} for i in range(EVENTS_PER_COMMIT)]
        snap = runs.store.transition(snap, snap.state, {"op": "bench", "events": batch})


def median_ms(work: Callable[[], Any], repeat: int = 7) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        size = len(json.dumps(work()))
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), size


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="vivary-bench-workbench-") as tmp:
        small, big = repository(Path(tmp) / "small", 10), repository(Path(tmp) / "big", 1000)
        lengthen(big, "run-0000", 10_000)
        few, many = RepoSource(small), RepoSource(big)
        rows = [
            ("runs list, 10 runs (baseline)", *median_ms(lambda: few.runs(0, 50))),
            ("runs list, 1,000 runs, page of 50", *median_ms(lambda: many.runs(0, 50))),
            ("runs list, 1,000 runs, last page", *median_ms(lambda: many.runs(950, 50))),
            ("run, a few events (baseline)", *median_ms(lambda: few.run("run-0000", 0, 100))),
            ("run, 10,000 events, first view (uncached)", *median_ms(
                lambda: RepoSource(big).run("run-0000", 0, 100), repeat=3)),
            ("run, 10,000 events, next page (cached by head)",
             *median_ms(lambda: many.run("run-0000", 100, 100))),
            ("event stream poll, 1,000 runs", *median_ms(many.tips)),
        ]
        subprocess.run(["git", "-C", str(big), "pack-refs", "--all"], check=True)  # what `git gc` does
        rows += [
            ("runs list, 1,000 runs, page of 50, packed refs", *median_ms(lambda: many.runs(0, 50))),
            ("event stream poll, 1,000 runs, packed refs", *median_ms(many.tips)),
        ]
    width = max(len(r[0]) for r in rows)
    print(f"{'view':<{width}}  {'median ms':>9}  {'bytes':>8}")
    for name, ms, size in rows:
        print(f"{name:<{width}}  {ms:9.1f}  {size:8d}")
    print(f"\nruns list: 1,000 runs / 10 runs = {rows[1][1] / rows[0][1]:.1f}x "
          f"(packed refs: {rows[7][1] / rows[0][1]:.1f}x)")
    print(f"run view: 10,000 events (uncached) / a few = {rows[4][1] / rows[3][1]:.1f}x; "
          f"cached page / a few = {rows[5][1] / rows[3][1]:.1f}x")


if __name__ == "__main__":
    main()
