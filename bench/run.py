"""Time tropo as whole processes against vivary-tropo 0.5.4 and ``git status``.

For each size the runner generates (or reuses) a workspace with :mod:`bench.generate`,
then runs every command as a separate process, ``--repeat`` times, and keeps the median
wall clock, the median CPU time (user + sys: what contention on a shared machine
inflates least) and the peak resident memory of that process (``wait4`` rusage).
It prints a table with the ratios and writes it to ``docs/benchmarks.md``.

    python -m bench.run --sizes 1000,20000 --repeat 5
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import generate

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "benchmarks.md"
UPSTREAM_VERSION = "0.5.4"
NOTES = "<!-- notes below are written by hand and kept by bench.run -->"
TARGETS = """\
Targets (issue 2), whole process: at 20k nodes, cold check >= 30x faster than
vivary-tropo, warm check >= 150x faster and < 0.4 s, `--staged` after a one-file
change < 0.4 s; at 100k nodes, warm check < 2 s and peak memory < 1 GiB."""


@dataclass(frozen=True)
class Sample:
    wall: float  # seconds, wall clock of the whole process
    cpu: float  # seconds, user + sys of the process
    rss: int  # bytes, peak resident set size
    rc: int


@dataclass
class Timing:
    samples: list[Sample] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    @property
    def rss(self) -> int:
        return max(s.rss for s in self.samples)


def run_once(argv: Sequence[str], cwd: Path, out: Path | None = None) -> Sample:
    """Run ``argv`` to completion; its own rusage, not the sum over all children."""
    with open(out, "wb") if out is not None else contextlib.nullcontext(subprocess.DEVNULL) as sink:
        started = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cwd, stdout=sink, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, proc.returncode)


def measure(argv: Sequence[str], cwd: Path, repeat: int,
            before: Callable[[int], None] | None = None, out: Path | None = None) -> Timing:
    """``repeat`` runs of ``argv``, each after ``before(i)`` (untimed)."""
    timing = Timing()
    for i in range(repeat):
        if before is not None:
            before(i)
        timing.samples.append(run_once(argv, cwd, out))
    return timing


@dataclass
class Row:
    label: str
    ours: Timing | None = None
    upstream: Timing | None = None
    note: str = ""


@dataclass
class SizeResult:
    nodes: int
    rows: list[Row]
    floor: Timing  # git status
    agreement: str = ""


def upstream_tropo() -> Path | None:
    """vivary-tropo's CLI from ``$VIVARY_UPSTREAM`` (a virtualenv), ``.upstream`` or /tmp/upstream."""
    env = os.environ.get("VIVARY_UPSTREAM")
    candidates = [Path(env)] if env else [REPO / ".upstream", Path("/tmp/upstream")]
    for venv in candidates:
        exe = venv / "bin" / "tropo"
        if exe.is_file():
            return exe
    return None


def ours_tropo() -> Path:
    """The ``tropo`` console script of the interpreter running the benchmark."""
    exe = Path(sys.executable).parent / "tropo"
    if not exe.is_file():
        raise SystemExit("bench.run: no tropo console script next to this python: pip install -e .")
    return exe


def findings_key(report: dict[str, object]) -> tuple[bool, set[tuple[str, int, str]]]:
    """What must agree between implementations: the verdict and (path, line, code)."""
    rows = report.get("findings", [])
    assert isinstance(rows, list)
    return report.get("errors") == 0, {(f["path"], f["line"], f["code"]) for f in rows}


def compare(ours: Path, upstream: Path) -> str:
    """One line on whether two ``check --json`` outputs agree, with the differences."""
    a_ok, a = findings_key(json.loads(ours.read_text()))
    b_ok, b = findings_key(json.loads(upstream.read_text()))
    if a_ok == b_ok and a == b:
        verdict = "clean" if a_ok else "fails"
        return f"agree: verdict {verdict}, {len(a)} identical findings (path, line, code)"
    parts = [f"DISAGREE: verdict ours {a_ok} vs upstream {b_ok}" if a_ok != b_ok else "DISAGREE"]
    parts += [f"only ours: {f}" for f in sorted(a - b)[:10]]
    parts += [f"only upstream: {f}" for f in sorted(b - a)[:10]]
    return "; ".join(parts)


def workspace(cache: Path, nodes: int, seed: int) -> Path:
    """The generated workspace for ``nodes``, built once and reused across runs."""
    ws = cache / f"ws-{nodes}-s{seed}"
    done = ws / ".git" / "bench-complete"
    if not done.exists():
        if ws.exists():
            shutil.rmtree(ws)
        print(f"  generating {nodes} nodes in {ws} ...", flush=True)
        generate.build(ws, nodes, seed)
        done.write_text("ok\n")
    return ws


def bench_size(ws: Path, nodes: int, repeat: int, cold_repeat: int, upstream: Path | None,
               upstream_repeat: int, upstream_full_max: int) -> SizeResult:
    ours = str(ours_tropo())
    tmp = Path(tempfile.mkdtemp(prefix="tropo-bench-"))
    private = ws / ".git" / "vivary"
    edited = f"{generate.RECORDS}/modules/{generate.HUB}/index.md"
    original = (ws / edited).read_bytes()

    def drop_cache(_: int) -> None:
        shutil.rmtree(private, ignore_errors=True)

    def stage_edit(i: int) -> None:
        # A new blob each time, so the staged run always parses one unseen file.
        (ws / edited).write_bytes(original + f"\nEdited in run {i} of {time.time()}.\n".encode())
        subprocess.run(["git", "add", edited], cwd=ws, check=True)

    rows: list[Row] = []
    check = [ours, "check", "--json"]
    floor = measure(["git", "status", "--porcelain"], ws, repeat)
    rows.append(Row("check, cold (`--no-cache`)", measure([*check, "--no-cache"], ws, cold_repeat)))
    rows.append(Row("check, cold (`.git/vivary` deleted)", measure(check, ws, cold_repeat, drop_cache)))
    run_once(check, ws)
    rows.append(Row("check, warm", measure(check, ws, repeat, out=tmp / "ours.json")))
    try:
        rows.append(Row("check `--staged`, one file changed and staged",
                        measure([*check, "--staged"], ws, repeat, stage_edit)))
    finally:
        (ws / edited).write_bytes(original)
        subprocess.run(["git", "reset", "-q", "--", edited], cwd=ws, check=True)
    rows.append(Row("graph `--json`", measure([ours, "graph", "--json"], ws, repeat)))
    rows.append(Row(f"blast {generate.HUB}", measure([ours, "blast", generate.HUB, "--json"], ws, repeat)))
    result = SizeResult(nodes, rows, floor)
    if upstream is None:
        for row in rows:
            row.note = "vivary-tropo not installed"
        return result
    up = str(upstream)
    n = upstream_repeat if nodes <= upstream_full_max else 1
    print(f"  vivary-tropo {UPSTREAM_VERSION}: check x{n} (takes a while) ...", flush=True)
    up_check = measure([up, "check", "--json", "--root", str(ws)], ws, n, out=tmp / "upstream.json")
    result.agreement = compare(tmp / "ours.json", tmp / "upstream.json")
    for row in rows[:3]:
        row.upstream = up_check
        row.note = "vivary-tropo has no cache: every check is cold"
    rows[3].note = "vivary-tropo has no `--staged`"
    if nodes <= upstream_full_max:
        rows[4].upstream = measure([up, "graph", "--json", "--root", str(ws)], ws, n)
        rows[5].upstream = measure([up, "blast", generate.HUB, "--json", "--root", str(ws)], ws, n)
    else:
        for row in rows[4:]:
            row.note = f"vivary-tropo not timed above {upstream_full_max} nodes (minutes per run)"
    shutil.rmtree(tmp, ignore_errors=True)
    return result


def _s(t: float) -> str:
    return f"{t:.3f}" if t < 10 else f"{t:.1f}"


def table(results: list[SizeResult]) -> str:
    head = ("| nodes | command | ours wall s | ours cpu s | ours peak MiB | vivary-tropo wall s "
            "| vivary-tropo cpu s | vivary-tropo / ours (wall) | (cpu) | ours / git status (wall) "
            "| note |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
    lines = []
    for r in results:
        lines.append(f"| {r.nodes} | `git status --porcelain` (floor) | {_s(r.floor.wall)} | "
                     f"{_s(r.floor.cpu)} | {r.floor.rss / 2**20:.0f} | | | | | 1.0 | |")
        for row in r.rows:
            assert row.ours is not None
            up = row.upstream
            theirs = f"{_s(up.wall)} | {_s(up.cpu)} | {up.wall / row.ours.wall:.0f}x | " \
                f"{up.cpu / row.ours.cpu:.0f}x" if up is not None else " | | | "
            lines.append(
                f"| {r.nodes} | {row.label} | {_s(row.ours.wall)} | {_s(row.ours.cpu)} | "
                f"{row.ours.rss / 2**20:.0f} | {theirs} | "
                f"{row.ours.wall / r.floor.wall:.1f} | {row.note} |")
    return head + "\n".join(lines) + "\n"


def verdicts(results: list[SizeResult]) -> list[str]:
    """Each target of the issue against what was measured (only sizes that ran)."""
    out = []
    by = {r.nodes: r for r in results}
    if 20000 in by:
        r = by[20000]
        cold, warm, staged = r.rows[0], r.rows[2], r.rows[3]
        assert cold.ours and warm.ours and staged.ours
        if cold.upstream is not None:
            x = cold.upstream.wall / cold.ours.wall
            out.append(f"20k cold check >= 30x vivary-tropo: {x:.0f}x — {'met' if x >= 30 else 'MISSED'}")
            x = warm.upstream.wall / warm.ours.wall if warm.upstream else 0.0
            out.append(f"20k warm check >= 150x vivary-tropo: {x:.0f}x — {'met' if x >= 150 else 'MISSED'}")
        out.append(f"20k warm check < 0.4 s: {warm.ours.wall:.3f} s — "
                   f"{'met' if warm.ours.wall < 0.4 else 'MISSED'}")
        out.append(f"20k `--staged` after a one-file change < 0.4 s: {staged.ours.wall:.3f} s — "
                   f"{'met' if staged.ours.wall < 0.4 else 'MISSED'}")
    if 100000 in by:
        big = by[100000]
        hot = big.rows[2].ours
        assert hot is not None
        peak = max(row.ours.rss for row in big.rows if row.ours is not None)
        out.append(f"100k warm check < 2 s: {hot.wall:.3f} s — {'met' if hot.wall < 2 else 'MISSED'}")
        out.append(f"100k peak memory < 1 GiB: {peak / 2**20:.0f} MiB — "
                   f"{'met' if peak < 2**30 else 'MISSED'}")
    return out


def machine() -> list[str]:
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    try:
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    return [f"date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
            f"cores: {os.cpu_count()} (shared with other work; load average at the end {load})",
            f"platform: {platform.platform()}",
            f"python: {platform.python_version()}", f"git: {git}"]


def markdown(results: list[SizeResult], repeat: int, command: str) -> str:
    agreement = [f"- {r.nodes} nodes: {r.agreement}" for r in results if r.agreement]
    return "\n".join([
        "# Benchmarks", "",
        "Each benchmark prints ratios against a baseline (vivary-tropo and `git status` for tropo;",
        "the replaced store for flow runs). Tests never assert times.", "",
        "## tropo: check, graph and blast (`python -m bench.run`)", "",
        "Whole processes, as a person or a hook runs them: each cell is the median of the",
        f"repeats ({repeat} for ours and `git status`; cold checks and vivary-tropo may use",
        "fewer, see the command under Reproduce and the notes), with",
        "the process's own CPU time (user + sys) and peak resident memory from `wait4`.",
        "`git status --porcelain` on the same repository is the floor: no tool that looks at",
        "the working tree can beat it by much. Workspaces come from `bench/generate.py`: the",
        "shape of `create-vivary init --preset coding` grown to N nodes (see its docstring).",
        "", TARGETS, "",
        "### Machine", "", *[f"- {m}" for m in machine()], "",
        "### Results", "", table(results),
        "### Against the targets", "", *[f"- {v}" for v in verdicts(results)], "",
        "### Same findings as vivary-tropo", "",
        *(agreement or ["- not compared (vivary-tropo not installed)"]), "",
        "### Reproduce", "",
        "```sh", "make upstream   # vivary-tropo 0.5.4 in .upstream (or set VIVARY_UPSTREAM)",
        command, "```", "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run",
        description="Time tropo against vivary-tropo and git status; write docs/benchmarks.md.",
        epilog="example: python -m bench.run --sizes 1000,20000 --repeat 5")
    parser.add_argument("--sizes", default="1000,20000,100000",
                        help="comma-separated node counts (default 1000,20000,100000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per command; medians reported")
    parser.add_argument("--cold-repeat", type=int, help="runs per cold check (default: --repeat)")
    parser.add_argument("--upstream-max", type=int, default=10**9,
                        help="above this size, do not run vivary-tropo at all (noted in the table)")
    parser.add_argument("--upstream-repeat", type=int, default=3,
                        help="runs per vivary-tropo command (it takes about a minute at 20k)")
    parser.add_argument("--upstream-full-max", type=int, default=20000,
                        help="above this size, time vivary-tropo's check once and skip the rest")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tropo-bench",
                        help="where generated workspaces are kept between runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DOC, help="Markdown file to write")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        for n in sizes:
            generate.Counts.of(n)
    except ValueError as exc:
        print(f"bench.run: --sizes: {exc}", file=sys.stderr)
        return 2
    if min(args.repeat, args.upstream_repeat, args.cold_repeat or 1) < 1:
        print("bench.run: --repeat, --cold-repeat and --upstream-repeat must be at least 1",
              file=sys.stderr)
        return 2
    upstream = upstream_tropo()
    if upstream is None:
        print("bench.run: vivary-tropo not found (set VIVARY_UPSTREAM or run `make upstream`): "
              "timing ours and git status only", file=sys.stderr)
    results = []
    for n in sizes:
        print(f"{n} nodes:", flush=True)
        ws = workspace(args.workdir, n, args.seed)
        skip = upstream is not None and n > args.upstream_max
        result = bench_size(ws, n, args.repeat, args.cold_repeat or args.repeat,
                            None if skip else upstream, args.upstream_repeat, args.upstream_full_max)
        if skip:
            for row in result.rows:
                row.note = f"vivary-tropo skipped above {args.upstream_max} nodes (--upstream-max)"
        results.append(result)
    print(table(results))
    for line in verdicts(results):
        print(line)
    for r in results:
        if r.agreement:
            print(f"{r.nodes} nodes: {r.agreement}")
    given = list(argv if argv is not None else sys.argv[1:])
    kept = [a for i, a in enumerate(given)
            if not a.startswith("--out") and not (i and given[i - 1] == "--out")]
    command = "python -m bench.run " + " ".join(kept)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = args.out.read_text() if args.out.is_file() else ""
    notes = old[old.index(NOTES):] if NOTES in old else ""
    args.out.write_text(markdown(results, args.repeat, command.strip()) + notes)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
