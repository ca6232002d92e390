"""Two checkouts of this project side by side: the same whole-process commands run under
each one's own virtualenv, interleaved (A, B, A, B, ...) so load on a shared machine
falls on both alike, and the medians compared, wall and CPU time (user + system, the
command's and its children's) with the load average before and after. For a change that
must not make anything slower, such as moving modules: `ours / base` above 1 is a slowdown.

    python -m bench.versus --base ../base-checkout [--repeat 5] [--nodes 20000] [--only TEXT]

Each checkout needs `.venv` with the project installed (`make test` or `make demo` makes
it). The workspace of the tropo rows is generated once (bench/generate.py) and copied,
one copy per side: a warm cache belongs to one version of the code.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Row:
    """One command: `{bin}` is the checkout's `.venv/bin`, `{ws}` the generated workspace."""

    name: str
    argv: tuple[str, ...]
    in_workspace: bool = False
    cold: bool = False  # remove the workspace's caches before each run


ROWS = (
    Row("strato --help (start-up)", ("{bin}/strato", "--help")),
    Row("vivary --help (start-up)", ("{bin}/vivary", "--help")),
    Row("tropo check, warm", ("{bin}/tropo", "check", "--json"), in_workspace=True),
    Row("tropo check, cold", ("{bin}/tropo", "check", "--json"), in_workspace=True, cold=True),
    Row("tropo check --no-cache", ("{bin}/tropo", "check", "--no-cache", "--json"), in_workspace=True),
    Row("tropo graph --json", ("{bin}/tropo", "graph", "--json"), in_workspace=True),
    Row("bench.flows --steps 200", ("{bin}/python", "-m", "bench.flows", "--steps", "200", "--items", "20")),
    Row("bench.guard at 300 entries", ("{bin}/python", "-m", "bench.guard", "--lengths", "300",
                                            "--moves", "3", "--repeat", "1")),
)


def _time(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds, and CPU seconds (user + system) of the process and all it waited for:
    on a loaded machine the CPU time is the figure to compare."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench.versus: {' '.join(argv)} exited {proc.returncode}: "
                         f"{proc.stderr.decode(errors='replace')[-400:]}")
    return took, cpu


def _load() -> str:
    return " ".join(f"{n:.1f}" for n in os.getloadavg())


def _generate(python: Path, nodes: int, into: Path) -> Path:
    subprocess.run([str(python), "-m", "bench.generate", str(into), "--nodes", str(nodes)],
                   cwd=HERE, check=True, capture_output=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (with .venv)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--only", default="", metavar="TEXT", help="rows whose name contains TEXT")
    args = parser.parse_args()
    sides = {"base": args.base.resolve(), "ours": HERE}
    for name, top in sides.items():
        if not (top / ".venv" / "bin" / "python").exists():
            parser.error(f"{name}: {top}/.venv/bin/python is missing (run `make test` there)")
    with tempfile.TemporaryDirectory(prefix="versus-") as tmp:
        made = _generate(HERE / ".venv" / "bin" / "python", args.nodes, Path(tmp) / "ws")
        spaces = {}
        for side in sides:  # one copy each: a warm cache is per code version
            spaces[side] = Path(tmp) / side
            shutil.copytree(made, spaces[side], symlinks=True)
        print(f"load average at the start: {_load()}")
        print(f"{'command':<34} {'base s':>8} {'ours s':>8} {'ours/base':>9} "
              f"{'base cpu':>8} {'ours cpu':>8} {'cpu ratio':>9}")
        for row in (r for r in ROWS if args.only in r.name):
            times: dict[str, list[tuple[float, float]]] = {"base": [], "ours": []}
            for turn in range(args.repeat + 1):  # the first turn warms caches and is dropped
                for side, top in sides.items():
                    if row.cold:
                        shutil.rmtree(spaces[side] / ".git" / "vivary", ignore_errors=True)
                    argv = [a.format(bin=top / ".venv" / "bin") for a in row.argv]
                    took = _time(argv, spaces[side] if row.in_workspace else top)
                    if turn:
                        times[side].append(took)
            base, ours = (statistics.median(wall for wall, _ in times[s]) for s in ("base", "ours"))
            base_cpu, ours_cpu = (statistics.median(cpu for _, cpu in times[s]) for s in ("base", "ours"))
            print(f"{row.name:<34} {base:8.3f} {ours:8.3f} {ours / base:8.2f}x "
                  f"{base_cpu:8.3f} {ours_cpu:8.3f} {ours_cpu / max(base_cpu, 1e-6):8.2f}x", flush=True)
        print(f"load average at the end: {_load()}")

if __name__ == "__main__":
    main()
