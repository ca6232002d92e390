"""Guard speed vs ledger length: transitions per second and `verify` time, with the
verification cache (``.git/vivary/guard``) warm and with it deleted before every
operation (the uncached path: every line's digest re-checked, every notes commit
re-compared), both measured in this run on the same repository.

    python -m bench.guard [--lengths 50,200,400] [--moves 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from strato.guard import cache, engine, verify_repository
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
        self.repo = gitrepo.require(root)
        self.state = "a"
        engine.register(self.repo, {"resource_id": RID, **POLICY})

    def move(self) -> None:
        nxt = "b" if self.state == "a" else "a"
        req = {"resource_id": RID, "from_state": self.state, "to_state": nxt}
        assert engine.transition(self.repo, req)["status"] == "applied"
        self.state = nxt

    def drop_cache(self) -> None:
        shutil.rmtree(cache.GuardCache(self.repo).root, ignore_errors=True)


def timed(fn: Callable[[], object], before: Callable[[], None] | None = None) -> float:
    if before is not None:
        before()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def verify_ok(led: Ledger) -> None:
    assert verify_repository(led.repo).ok


def measure(led: Ledger, moves: int) -> dict[str, float]:
    cached = sum(timed(led.move) for _ in range(moves))
    uncached = sum(timed(led.move, led.drop_cache) for _ in range(moves))
    cold = timed(lambda: verify_ok(led), led.drop_cache)
    warm = timed(lambda: verify_ok(led))
    led.move()  # one append since the last verify: only its line and commit are new
    incremental = timed(lambda: verify_ok(led))
    return {
        "tps_cached": moves / cached,
        "tps_uncached": moves / uncached,
        "verify_uncached": cold,
        "verify_warm": warm,
        "verify_after_append": incremental,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="50,200,400")
    parser.add_argument("--moves", type=int, default=20)
    args = parser.parse_args()
    os.environ.setdefault("GIT_AUTHOR_NAME", "bench")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    os.environ.setdefault("GIT_COMMITTER_NAME", "bench")
    os.environ.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    print(
        f"{'entries':>7} | {'tx/s cached':>11} {'uncached':>9} {'ratio':>6} | "
        f"{'verify uncached':>15} {'warm':>8} {'+1 entry':>9} {'ratio':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        led = Ledger(Path(tmp) / "repo")
        done = 1
        for length in (int(x) for x in args.lengths.split(",")):
            while done < length:
                led.move()
                done += 1
            r = measure(led, args.moves)
            done += 2 * args.moves + 1
            print(
                f"{length:>7} | {r['tps_cached']:>11.1f} {r['tps_uncached']:>9.1f} "
                f"{r['tps_cached'] / r['tps_uncached']:>5.1f}x | "
                f"{r['verify_uncached']:>14.3f}s {r['verify_warm']:>7.3f}s "
                f"{r['verify_after_append']:>8.3f}s "
                f"{r['verify_uncached'] / r['verify_after_append']:>6.0f}x"
            )


if __name__ == "__main__":
    main()
