"""The guard for a team (issue 27): a review at 10,000 ledger entries with 20 pull
requests open, and a ``strato guard sync`` after 20 concurrent pushes.

One working repository grows a ledger to ``--entries`` lines (one notes commit each) and
pins it on ``main``; 20 branches each pin their own notes commit on top (a register and
a transition of their own resource), pushed to a bare remote with the union of the 20
as the shared notes ref and each under ``refs/notes/vivary/branches/``. Then, medians of
``--repeat`` runs, wall and CPU seconds (this process and git):

- **review**: in a fresh clone set up as the CI recipe does, ``review`` of one open PR
  against ``main`` with the verification cache deleted (what CI pays); once with main
  as the PR forked from, once after another PR landed first (the union path);
- **sync**: a clone holding a 21st PR's notes merges them with the remote's 20 and
  pushes with a lease (the remote reset to the 20 before each run).

    python -m bench.guard_team [--entries 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.guard import Ledger, cpu_seconds, timed
from strato.guard import cache, engine, pin, review, store, team, union
from tropo.git import refs as gitrefs
from tropo.git import repo as gitrepo

PRS = 20


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _pr(led: Ledger, base: str, name: str) -> str:
    """A pull request's own notes: ``name`` registered and moved once, on ``base``."""
    gitrefs.cas_ref(led.repo, store.REF, base, gitrefs.read_ref(led.repo, store.REF), "bench: fork")
    gitrefs.forget_log(led.repo, store.REF)  # each PR forks from the base, on purpose
    engine.register(led.repo, {"resource_id": name, "graph": {"a": ["b"]}, "initial": "a"})
    engine.transition(led.repo, {"resource_id": name, "from_state": "a", "to_state": "b"})
    tip = gitrefs.read_ref(led.repo, store.REF)
    assert tip is not None
    return tip


def _branch(root: Path, name: str, pinned: str) -> None:
    git(root, "checkout", "-q", "-B", name, "main")
    (root / pin.PIN_PATH).parent.mkdir(parents=True, exist_ok=True)
    (root / pin.PIN_PATH).write_text(pin.text(pinned))
    git(root, "add", pin.PIN_PATH)
    git(root, "commit", "-qm", f"{name}: pin")


def build(tmp: Path, entries: int) -> tuple[Path, Path, str, list[str]]:
    """The remote with main, 20 open PRs and their union; the working repo; the 21st PR's notes."""
    root = tmp / "work"
    led = Ledger(root)
    led.grow(entries - 1)
    led.verified()
    base = gitrefs.read_ref(led.repo, store.REF)
    assert base is not None
    git(root, "branch", "-M", "main")
    _branch(root, "main", base)
    tips = [_pr(led, base, f"pr:{n}") for n in range(PRS + 1)]
    shared: str | None = base
    for tip in tips[:PRS]:
        shared = union.merge(led.repo, shared, tip)
    assert shared is not None
    gitrefs.cas_ref(led.repo, store.REF, shared, gitrefs.read_ref(led.repo, store.REF), "bench: union")
    remote = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    for n, tip in enumerate(tips[:PRS]):
        _branch(root, f"pr-{n}", tip)
    specs = [f"{tip}:{team.branch_ref(f'pr-{n}')}" for n, tip in enumerate(tips[:PRS])]
    git(root, "push", "-q", "--no-verify", str(remote), "--all")
    git(root, "push", "-q", "--no-verify", str(remote), f"{store.REF}:{store.REF}", *specs)
    return remote, root, tips[PRS], tips


def _clone(remote: Path, where: Path, branch: str) -> Path:
    git(where.parent, "clone", "-q", str(remote), str(where))
    git(where, "fetch", "-q", "origin", "+refs/notes/vivary/*:refs/notes/vivary/*")
    git(where, "checkout", "-q", f"refs/remotes/origin/{branch}")
    return where


def bench_review(remote: Path, tmp: Path, repeat: int, landed: bool) -> tuple[float, float]:
    where = _clone(remote, tmp / f"ci-{landed}", "pr-7")
    repo = gitrepo.require(where)
    base = "refs/remotes/origin/main"
    if landed:  # pr-3 landed first: main pins the union of its notes and main's
        git(where, "checkout", "-q", "-B", "landed", base)
        merged = union.merge(repo, pin.read(gitrepo.resolve_commit(repo, base)), pin.read(
            gitrepo.resolve_commit(repo, "refs/remotes/origin/pr-3")))
        (where / pin.PIN_PATH).write_text(pin.text(merged))
        git(where, "commit", "-qam", "pr-3 landed")
        base = "landed"
        git(where, "checkout", "-q", "refs/remotes/origin/pr-7")

    def drop() -> None:
        shutil.rmtree(cache.GuardCache(repo).root, ignore_errors=True)

    def once() -> None:
        report = review.review(repo, base, "HEAD")
        assert report.ok and len(report.rows) == 2, report.verify.breaks

    runs = [timed(once, drop) for _ in range(repeat)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def bench_sync(remote: Path, root: Path, own: str, tmp: Path, repeat: int) -> tuple[float, float]:
    shared = git(remote, "rev-parse", store.REF).strip()
    where = tmp / "contributor"
    git(tmp, "clone", "-q", str(remote), str(where))
    git(where, "fetch", "-q", str(root), f"{own}:{store.REF}")
    repo = gitrepo.require(where)

    def reset() -> None:
        git(remote, "update-ref", store.REF, shared)

    def once() -> None:
        done = team.sync(repo, "origin")
        assert done["pushed"] is not None

    runs = [timed(once, reset) for _ in range(repeat)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; medians shown")
    args = parser.parse_args()
    for name, value in (("NAME", "bench"), ("EMAIL", "bench@example.com")):
        os.environ.setdefault(f"GIT_AUTHOR_{name}", value)
        os.environ.setdefault(f"GIT_COMMITTER_{name}", value)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        start, cpu = time.perf_counter(), cpu_seconds()
        remote, root, own, _ = build(tmp, args.entries)
        grown, grown_cpu = time.perf_counter() - start, cpu_seconds() - cpu
        print(f"built and verified in {grown:.0f} s (cpu {grown_cpu:.0f} s)", flush=True)
        fork = bench_review(remote, tmp, args.repeat, landed=False)
        after = bench_review(remote, tmp, args.repeat, landed=True)
        synced = bench_sync(remote, root, own, tmp, args.repeat)
    print(f"team, {args.entries} entries, {PRS} open PRs (medians of {args.repeat}; wall s / cpu s):")
    print(f"  review, base as forked:        {fork[0]:.3f} / {fork[1]:.3f}   (target <= 1.5 s)")
    print(f"  review, another PR landed:     {after[0]:.3f} / {after[1]:.3f}   (target <= 1.5 s)")
    print(f"  sync after {PRS} pushes:         {synced[0]:.3f} / {synced[1]:.3f}   (target <= 2 s)")
    print(f"  load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
