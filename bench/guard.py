"""Guard speed vs ledger length: the cost of one append and of `verify`, with the
verification cache (``.git/vivary/guard``) warm and with it deleted before every
operation (the uncached path: a transition first verifies its whole ledger, then
appends reading only the running state and a few lines; verify re-checks every line and
every notes commit), on one repository grown in this run (:meth:`Ledger.grow`, checked by
`strato guard verify` before anything is measured). Append costs are also shown as a
ratio to the first (shortest) length, the baseline measured in the same run, and the
last line compares the longest length with the targets; every figure is the median of
``--repeat`` runs. The **cpu** columns are the CPU seconds of this process and git's: on
a shared machine at ``nice -n 19``, wall time mostly measures the other processes.

    python -m bench.guard [--lengths 10,1000,10000] [--moves 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from strato.guard import append, cache, engine, predicates, store
from strato.guard.canonical import payload_digest
from strato.guard.verify import verify_repository
from tropo.git import repo as gitrepo

RID = "release:bench"
POLICY = {"graph": {"a": ["b"], "b": ["a"]}, "initial": "a"}


class Ledger:
    """One repository whose resource alternates a -> b -> a, one notes commit per entry."""

    def __init__(self, root: Path) -> None:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / "README.md").write_text("bench\n")
        subprocess.run(["git", "-C", str(root), "add", "."], check=True)
        subprocess.run(["git", "-C", str(root), "commit", "-qm", "init"], check=True)
        self.root = root
        self.repo = gitrepo.require(root)
        self.state = "a"
        engine.register(self.repo, {"resource_id": RID, **POLICY})

    def move(self) -> None:
        nxt = "b" if self.state == "a" else "a"
        req = {"resource_id": RID, "from_state": self.state, "to_state": nxt}
        assert engine.transition(self.repo, req)["status"] == "applied"
        self.state = nxt

    def grow(self, count: int) -> None:
        """``count`` more transitions, each the entry and notes commit ``move`` writes, through
        the engine's own append (``append.commit``: the step re-checked on the newest ledger,
        compare-and-swap, the running state, `git gc --auto` every 256 lines), without the
        verify a transition runs first: the fixture of a long ledger, not a measurement.
        ``verified`` then checks the result as `strato guard verify` does."""
        for _ in range(count):
            nxt = "b" if self.state == "a" else "a"
            append.commit(self.repo, RID, functools.partial(_flip, self.state, nxt))
            self.state = nxt

    def verified(self) -> None:
        """`strato guard verify` on the repository, in its own process: the ledger grown
        here must pass it before anything is measured on it."""
        verify = [sys.executable, "-m", "strato.cli", "guard", "verify"]
        found = subprocess.run(verify, cwd=self.root, capture_output=True, text=True)
        assert found.returncode == 0, found.stdout + found.stderr

    def drop_cache(self) -> None:
        shutil.rmtree(cache.GuardCache(self.repo).root, ignore_errors=True)


def _flip(src: str, dst: str, snap: store.LedgerSnapshot) -> tuple[dict[str, Any], append.Respond]:
    """The entry `engine.transition` appends for ``src -> dst`` under POLICY (no predicates:
    met, stakes default), decided on ``snap`` as its step decides."""
    state = store.require(snap)
    assert state.current_state == src
    entry = {
        "from_state": src,
        "to_state": dst,
        "outcome": "applied",
        "kind": "transition",
        "resolved_by": "agent",
        "idempotency_key": None,
        "payload_digest": payload_digest(src, dst, {}, [], "agent", state.checksum),
        "rationale": None,
        "verdict": predicates.verdict([], state.policy.stake(src, dst), 0),
    }
    return entry, lambda sealed: sealed


def cpu_seconds() -> float:
    """CPU seconds of this process and its reaped children (git): on a shared machine at
    ``nice -n 19`` wall time mostly measures the other processes, CPU time does not."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], object], before: Callable[[], None] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn()``."""
    if before is not None:
        before()
    start, cpu = time.perf_counter(), cpu_seconds()
    fn()
    return time.perf_counter() - start, cpu_seconds() - cpu


def verify_ok(led: Ledger) -> None:
    assert verify_repository(led.repo).ok


def measure(led: Ledger, moves: int) -> dict[str, float]:
    cached = [timed(led.move) for _ in range(moves)]
    uncached = [timed(led.move, led.drop_cache) for _ in range(moves)]
    cold = timed(lambda: verify_ok(led), led.drop_cache)
    warm = timed(lambda: verify_ok(led))
    led.move()  # one append since the last verify: only its line and commit are new
    incremental = timed(lambda: verify_ok(led))
    return {
        "append_cached": sum(w for w, _ in cached) / moves,
        "append_cached_cpu": sum(c for _, c in cached) / moves,
        "append_uncached": sum(w for w, _ in uncached) / moves,
        "append_uncached_cpu": sum(c for _, c in uncached) / moves,
        "verify_uncached": cold[0],
        "verify_uncached_cpu": cold[1],
        "verify_warm": warm[0],
        "verify_warm_cpu": warm[1],
        "verify_after_append": incremental[0],
        "verify_after_append_cpu": incremental[1],
    }


def medians(led: Ledger, moves: int, repeat: int) -> dict[str, float]:
    runs = [measure(led, moves) for _ in range(repeat)]
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="10,1000,10000")
    parser.add_argument("--moves", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3, help="runs per length; medians shown")
    args = parser.parse_args()
    os.environ.setdefault("GIT_AUTHOR_NAME", "bench")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    os.environ.setdefault("GIT_COMMITTER_NAME", "bench")
    os.environ.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    print(
        f"{'entries':>7} | {'append ms':>9} {'cpu ms':>7} {'x base':>6} {'uncached':>9} {'x base':>6} "
        f"{'cpu ms':>7} {'x base':>6} | {'verify uncached':>15} {'cpu':>7} {'warm':>8} {'cpu':>7} "
        f"{'+1 entry':>9} {'cpu':>7}"
    )
    load = os.getloadavg()[0]
    base: dict[str, float] | None = None
    r: dict[str, float] = {}
    length = 0
    with tempfile.TemporaryDirectory() as tmp:
        led = Ledger(Path(tmp) / "repo")
        done = 1
        for length in (int(x) for x in args.lengths.split(",")):
            led.grow(length - done)
            done = max(done, length)
            led.verified()
            r = medians(led, args.moves, args.repeat)
            done += (2 * args.moves + 1) * args.repeat
            base = base or r
            print(
                f"{length:>7} | {1000 * r['append_cached']:>9.1f} {1000 * r['append_cached_cpu']:>7.1f} "
                f"{r['append_cached_cpu'] / base['append_cached_cpu']:>5.2f}x "
                f"{1000 * r['append_uncached']:>9.1f} "
                f"{r['append_uncached'] / base['append_uncached']:>5.2f}x "
                f"{1000 * r['append_uncached_cpu']:>7.1f} "
                f"{r['append_uncached_cpu'] / base['append_uncached_cpu']:>5.2f}x | "
                f"{r['verify_uncached']:>14.3f}s {r['verify_uncached_cpu']:>6.3f}s "
                f"{r['verify_warm']:>7.3f}s {r['verify_warm_cpu']:>6.3f}s "
                f"{r['verify_after_append']:>8.3f}s {r['verify_after_append_cpu']:>6.3f}s",
                flush=True,
            )
    if base is not None:
        print(
            f"targets at {length} entries, whole ledger with no cache: append "
            f"{r['append_uncached'] / base['append_uncached']:.2f}x its cost at the first "
            f"length (CPU {r['append_uncached_cpu'] / base['append_uncached_cpu']:.2f}x; <= 2x); "
            f"verify {r['verify_uncached']:.3f} s (CPU {r['verify_uncached_cpu']:.3f} s; <= 1 s, issue 32); "
            f"warm verify {r['verify_warm']:.3f} s (<= 0.05 s); load average {load:.1f} before, "
            f"{os.getloadavg()[0]:.1f} after"
        )


if __name__ == "__main__":
    main()
