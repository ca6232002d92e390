"""Cold ``tropo check`` side by side: another checkout's code against this one's, on the
generated 20k workspace and on the held-out one (issue 32's "cold check at 20k <= 1 s").

Both sides run ``python -m tropo check`` with this interpreter, each with its own source
first on ``PYTHONPATH``, interleaved (base, ours, base, ...), cold in both ways: with
``.git/vivary`` deleted before each run, and with ``--no-cache``. Each cell is the median
of the repeats, wall and CPU (user + system of the process and its children, git
included); the outputs of every run must be byte-identical between the two sides, or
it stops. Beside them, the same run times ``git status`` as the check asks it (untracked
files listed): the walk of the work tree no check can skip, the floor a cold check
stands on. Bytecode is written and warmed first (``PYTHONDONTWRITEBYTECODE`` is dropped:
an installed tropo has its ``.pyc``).

    git -C . worktree add /tmp/base-src <base-commit>   # or unpack `git archive`
    python -m bench.coldcheck --base /tmp/base-src [--repeat 5] [--workspace DIR ...] [--busy]

``--busy`` keeps one core busy the whole time (``yes > /dev/null`` beside the runs): a
check that spreads its work over a second core must not lose there.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
MODES = (("cold (.git/vivary deleted)", ()), ("--no-cache", ("--no-cache",)))


def _run(source: Path, workspace: Path, extra: tuple[str, ...]) -> tuple[float, float, bytes]:
    """One cold check: wall s, CPU s, and everything it said (exit code last)."""
    if not extra:
        shutil.rmtree(workspace / ".git" / "vivary", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(source)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tropo", "check", *extra], cwd=workspace, env=env,
                          capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench.coldcheck: {source}: tropo check exited {proc.returncode}: "
                         f"{proc.stderr.decode(errors='replace')[-400:]}")
    return wall, cpu, proc.stdout + proc.stderr + bytes([proc.returncode])


def _git_status(workspace: Path) -> tuple[float, float]:
    """Wall and CPU s of the ``git status`` a worktree check runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(["git", "--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all",
                    "--ignore-submodules=all"], cwd=workspace, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _workspaces(given: list[Path], nodes: int, scratch: Path) -> list[Path]:
    if given:
        return given
    made = []
    for module in ("bench.generate", "bench.heldout"):
        out = scratch / module.split(".")[1]
        subprocess.run([sys.executable, "-m", module, str(out), "--nodes", str(nodes)], cwd=HERE,
                       check=True, capture_output=True)
        made.append(out)
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.coldcheck", description=__doc__.splitlines()[0],
        epilog="example: python -m bench.coldcheck --base /tmp/base-src --repeat 5")
    parser.add_argument("--base", type=Path, required=True, help="the other checkout's source folder")
    parser.add_argument("--repeat", type=int, default=5, help="runs per side and cell (median)")
    parser.add_argument("--nodes", type=int, default=20000, help="documents per generated workspace")
    parser.add_argument("--workspace", type=Path, action="append", default=[],
                        help="a workspace to time instead of generating both (repeatable)")
    parser.add_argument("--busy", action="store_true",
                        help="keep one core busy beside every run (yes > /dev/null)")
    args = parser.parse_args(argv)
    if not (args.base / "tropo" / "__init__.py").is_file():
        print(f"bench.coldcheck: {args.base} holds no tropo package", file=sys.stderr)
        return 2
    sides = {"base": args.base.resolve(), "ours": HERE}
    busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if args.busy else None
    try:
        return _table(args, sides, busy is not None)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


def _table(args: argparse.Namespace, sides: dict[str, Path], busy: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="coldcheck-") as scratch:
        workspaces = _workspaces(args.workspace, args.nodes, Path(scratch))
        print(f"load before: {' '.join(f'{n:.1f}' for n in os.getloadavg())}; cores: {os.cpu_count()}; "
              f"python {sys.version.split()[0]}" + ("; one core kept busy (yes)" if busy else ""))
        print("| workspace | check | base wall s | ours wall s | ours / base | base CPU s | ours CPU s "
              "| ours / base (CPU) |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for workspace in workspaces:
            for source in sides.values():  # bytecode written, files in the page cache
                _run(source, workspace, ())
            for label, extra in MODES:
                walls: dict[str, list[float]] = {name: [] for name in sides}
                cpus: dict[str, list[float]] = {name: [] for name in sides}
                said: set[bytes] = set()
                for _ in range(args.repeat):
                    for name, source in sides.items():
                        wall, cpu, out = _run(source, workspace, extra)
                        walls[name].append(wall)
                        cpus[name].append(cpu)
                        said.add(out)
                if len(said) != 1:
                    print(f"bench.coldcheck: {workspace}: the two sides' outputs differ", file=sys.stderr)
                    return 1
                w = {name: statistics.median(v) for name, v in walls.items()}
                c = {name: statistics.median(v) for name, v in cpus.items()}
                print(f"| {workspace.name} | {label} | {w['base']:.3f} | {w['ours']:.3f} | "
                      f"{w['ours'] / w['base']:.2f}x | {c['base']:.3f} | {c['ours']:.3f} | "
                      f"{c['ours'] / c['base']:.2f}x |")
            status = [_git_status(workspace) for _ in range(args.repeat)]
            sw, sc = statistics.median(s[0] for s in status), statistics.median(s[1] for s in status)
            print(f"| {workspace.name} | `git status` alone (baseline) | {sw:.3f} | {sw:.3f} | | "
                  f"{sc:.3f} | {sc:.3f} | |")
        print(f"load after: {' '.join(f'{n:.1f}' for n in os.getloadavg())}; outputs byte-identical")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
