"""The heartbeat's two costs: what the post-commit hook adds to ``git commit``, and one
heartbeat over a large backlog.

1. Two identical repositories, one with ``vivary hooks install --hook post-commit``;
   the same empty commit is timed in each, alternating, ``--commits`` times (whole
   ``git commit`` process, wall clock). After each hooked commit the bench waits for the
   detached heartbeat to finish (untimed), so it never steals CPU from the next sample.
2. A repository with ``--history`` new commits (fix commits among them) and
   ``--transcript-mb`` of Claude Code JSONL; ``strato heartbeat run`` is timed as a
   whole process, with its peak RSS, against a baseline in the same run: a plain
   Python loop that only reads and ``json.loads`` every transcript line.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
DATE = {"GIT_AUTHOR_DATE": "@1790000000 +0000", "GIT_COMMITTER_DATE": "@1790000000 +0000"}


def _git(root: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, input=data,
                          env={**os.environ, **DATE}).stdout.decode()


def _repo(root: Path) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.name", "Bench")
    _git(root, "config", "user.email", "bench@example.com")
    _git(root, "commit", "-q", "--allow-empty", "-m", "init")
    return root


def _commit(root: Path) -> tuple[float, float]:
    """Wall and CPU (user+sys of git and its hook) seconds of one ``git commit``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "sample"], cwd=root, check=True,
                   capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _runs(root: Path) -> int:
    log = root / ".git" / "vivary" / "heartbeat" / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _wait_idle(root: Path, runs: int) -> None:
    """Until the background heartbeat has made run number ``runs`` and let go."""
    side = root / ".git" / "vivary" / "heartbeat"
    while _runs(root) < runs or (side / "pending").exists() or (side / "pending.taken").exists():
        time.sleep(0.01)
    with open(side / "run.lock", "ab") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)


def hook_cost(tmp: Path, samples: int) -> dict[str, float]:
    plain, hooked = _repo(tmp / "plain"), _repo(tmp / "hooked")
    subprocess.run([str(BIN / "vivary"), "hooks", "install", "--hook", "post-commit"], cwd=hooked,
                   check=True, capture_output=True)
    _git(hooked, "config", "vivary.heartbeat.debounceMs", "0")
    without, with_hook, floor = [], [], []
    for _ in range(samples):
        without.append(_commit(plain))
        runs = _runs(hooked)
        with_hook.append(_commit(hooked))
        _wait_idle(hooked, runs + 1)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        floor.append(time.perf_counter() - start)
    med = statistics.median
    base, hook = med(w for w, _ in without), med(w for w, _ in with_hook)
    base_cpu, hook_cpu = med(c for _, c in without), med(c for _, c in with_hook)
    return {"commit_ms": base * 1000, "commit_with_hook_ms": hook * 1000,
            "added_ms": (hook - base) * 1000, "ratio": hook / base,
            "added_cpu_ms": (hook_cpu - base_cpu) * 1000, "python_floor_ms": med(floor) * 1000}


def _burst(root: Path, size: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``size`` back-to-back ``git commit`` processes, none waiting
    for anything the hook left behind; CPU counts only what was reaped (git, its hook)."""
    walls, cpus = zip(*(_commit(root) for _ in range(size)), strict=True)
    return sum(walls), sum(cpus)


def _pick(root: Path, size: int, *, hooked: bool) -> tuple[float, float]:
    """One ``git cherry-pick`` of ``size`` commits (the hook fires once per commit), on
    a branch left behind; the heartbeat, settled afterwards, saw the last pick."""
    _git(root, "checkout", "-q", "-B", "picked", f"main~{size}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(["git", "cherry-pick", "--allow-empty", "--keep-redundant-commits",
                    f"main~{size}..main"], cwd=root, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if hooked:
        _settle(root)
    _git(root, "checkout", "-q", "main")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _settle(root: Path) -> None:
    """Untimed, between samples: until a heartbeat has run over HEAD and let go."""
    side = root / ".git" / "vivary" / "heartbeat"
    head = _git(root, "rev-parse", "HEAD").strip()
    while True:
        try:
            if json.loads((side / "state.json").read_text()).get("head") == head:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    with open(side / "run.lock", "ab") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)


def burst_cost(tmp: Path, samples: int, size: int = 5) -> dict[str, float]:
    """What the hook adds per commit in a burst of ``size`` back-to-back commits, and per
    commit of one cherry-pick of ``size`` commits: the hooked repository against the
    plain one, alternating, with the heartbeat's default debounce, so the background
    runner competes with the rest of the burst as it does for a person."""
    plain, hooked = _repo(tmp / "burst-plain"), _repo(tmp / "burst-hooked")
    subprocess.run([str(BIN / "vivary"), "hooks", "install", "--hook", "post-commit"], cwd=hooked,
                   check=True, capture_output=True)
    rows: dict[str, list[tuple[float, float]]] = {"plain": [], "hooked": [], "pick_plain": [],
                                                  "pick_hooked": []}
    for _ in range(samples):
        rows["plain"].append(_burst(plain, size))
        rows["hooked"].append(_burst(hooked, size))
        _settle(hooked)
        rows["pick_plain"].append(_pick(plain, size, hooked=False))
        rows["pick_hooked"].append(_pick(hooked, size, hooked=True))
    med = statistics.median
    wall = {k: med(w for w, _ in v) * 1000 / size for k, v in rows.items()}
    cpu = {k: med(c for _, c in v) * 1000 / size for k, v in rows.items()}
    return {"commit_ms": wall["plain"], "added_ms": wall["hooked"] - wall["plain"],
            "added_cpu_ms": cpu["hooked"] - cpu["plain"], "pick_ms": wall["pick_plain"],
            "pick_added_ms": wall["pick_hooked"] - wall["pick_plain"],
            "pick_added_cpu_ms": cpu["pick_hooked"] - cpu["pick_plain"],
            "load": os.getloadavg()[0]}


def history(root: Path, commits: int) -> None:
    """``commits`` commits through one fast-import stream (a tenth of them fixes)."""
    lines = []
    for i in range(commits):
        subject = f"fix(area{i % 7}): bug {i}" if i % 10 == 0 else f"feat: step {i}"
        msg = subject.encode()
        body = f"content {i}\n".encode()
        lines += [b"commit refs/heads/main", b"committer Bench <bench@example.com> 1790000000 +0000",
                  b"data %d" % len(msg), msg]
        if i == 0:
            lines.append(b"from refs/heads/main^0")
        lines += [f"M 100644 inline src/f{i % 50}.py".encode(), b"data %d" % len(body), body, b""]
    _git(root, "fast-import", "--quiet", data=b"\n".join(lines) + b"\n")
    _git(root, "reset", "-q", "--hard", "main")


def transcripts(folder: Path, root: Path, megabytes: int) -> int:
    """Claude Code sessions of ~5 MB each: tool calls between large tool results."""
    folder.mkdir(parents=True)
    blob = "x" * 4_000  # a tool result; real sessions alternate calls and results like this
    size, n = 0, 0
    while size < megabytes * 1024 * 1024:
        lines = []
        for i in range(250):
            when = f"2026-09-20T00:{i % 60:02d}:{i % 60:02d}Z"
            cmd = ("git status", "pytest -q", "git commit -m x", "ls")[i % 4]
            lines.append(json.dumps({"type": "assistant", "sessionId": f"s{n}", "timestamp": when,
                                     "cwd": str(root), "message": {"content": [
                                         {"type": "tool_use", "name": "Bash", "input": {"command": cmd}}]}}))
            lines.append(json.dumps({"type": "user", "sessionId": f"s{n}", "timestamp": when,
                                     "message": {"content": [{"type": "tool_result", "content": blob}]}}))
        text = "\n".join(lines) + "\n"
        (folder / f"s{n}.jsonl").write_text(text)
        size += len(text)
        n += 1
    return size


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, proc.stdout


BASELINE = ("import json, pathlib, sys\n"
            "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.jsonl')):\n"
            "    with open(p, 'rb') as fh:\n"
            "        for line in fh: json.loads(line)\n")


def backlog(tmp: Path, commits: int, megabytes: int, repeats: int) -> dict[str, float]:
    root = _repo(tmp / "backlog")
    history(root, commits)
    home = tmp / "home"
    folder = home / ".claude" / "projects" / "".join(c if c.isalnum() or c == "-" else "-" for c in str(root))
    size = transcripts(folder, root, megabytes)
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    base = [_timed([sys.executable, "-c", BASELINE, str(folder)], root, env)[0] for _ in range(repeats)]
    walls, out = [], ""
    for _ in range(repeats):
        with contextlib.suppress(FileNotFoundError):  # the first run finds none
            shutil.rmtree(root / ".git" / "vivary")
        wall, _, out = _timed([str(BIN / "strato"), "heartbeat", "run", "--json"], root, env)
        walls.append(wall)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child, MiB
    result = json.loads(out)
    return {"commits": result["commits"], "transcript_mb": size / 1024 / 1024,
            "heartbeat_s": statistics.median(walls), "read_only_baseline_s": statistics.median(base),
            "ratio": statistics.median(walls) / statistics.median(base), "peak_rss_mib": rss,
            "new_proposals": len(result["new"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=21, help="hook samples (median)")
    parser.add_argument("--history", type=int, default=1000)
    parser.add_argument("--transcript-mb", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bursts", type=int, default=9, help="burst samples (median)")
    parser.add_argument("--burst-only", action="store_true", help="skip the single-commit and backlog parts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vivary-bench-heartbeat-") as tmp:
        burst = burst_cost(Path(tmp), args.bursts)
        print(f"post-commit hook, bursts of 5 (median of {args.bursts}, load {burst['load']:.1f}): "
              f"commit {burst['commit_ms']:.1f} ms, added {burst['added_ms']:.1f} ms per commit "
              f"(target <= 30 ms), added CPU {burst['added_cpu_ms']:.1f} ms; cherry-pick of 5: "
              f"{burst['pick_ms']:.1f} ms per commit, added {burst['pick_added_ms']:.1f} ms, "
              f"added CPU {burst['pick_added_cpu_ms']:.1f} ms")
        if args.burst_only:
            return
        hook = hook_cost(Path(tmp), args.commits)
        print(f"post-commit hook: commit {hook['commit_ms']:.1f} ms, with hook "
              f"{hook['commit_with_hook_ms']:.1f} ms, added {hook['added_ms']:.1f} ms "
              f"(x{hook['ratio']:.2f}; target < 30 ms added); added CPU {hook['added_cpu_ms']:.1f} ms; "
              f"a bare `python -I -c pass` takes {hook['python_floor_ms']:.1f} ms")
        big = backlog(Path(tmp), args.history, args.transcript_mb, args.repeats)
        print(f"heartbeat over {big['commits']} commits and {big['transcript_mb']:.0f} MB of transcripts: "
              f"{big['heartbeat_s']:.2f} s (read+parse baseline {big['read_only_baseline_s']:.2f} s, "
              f"x{big['ratio']:.2f}), peak RSS {big['peak_rss_mib']:.0f} MiB, "
              f"{big['new_proposals']} proposals (targets < 10 s, < 300 MiB)")


if __name__ == "__main__":
    main()
