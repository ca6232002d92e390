"""Retrieval and review benchmark: warm ``query``/``find`` against vivary-tropo 0.5.4 run
in the same invocation on the same synthetic workspace, and ``diff`` between two commits
that differ in 10 files. Prints a Markdown table (wall and CPU seconds of each whole
process, median of --runs) and checks that both tools return the same JSON.

    python -m bench.retrieval --nodes 20000 [--runs 3] [--upstream /tmp/upstream]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import corpus

QUERY = ["query", "qepavi dedero", "--json"]
FIND = ["find", "qepavi dedero", "--budget", "400", "--json"]


def run(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process and its children, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def median_run(argv: list[str], cwd: Path, runs: int) -> tuple[float, float, str]:
    results = [run(argv, cwd) for _ in range(runs)]
    return (statistics.median(r[0] for r in results), statistics.median(r[1] for r in results),
            results[-1][2])


def edit_ten(root: Path, seed: int) -> list[str]:
    """Change a field in 10 random modules, as a small pull request would."""
    rng = random.Random(seed)
    paths = sorted(root.glob("modules/*/*.md"))
    chosen = rng.sample(paths, 10)
    for p in chosen:
        p.write_text(p.read_text().replace("status: active", "status: draft", 1))
    return [p.relative_to(root).as_posix() for p in chosen]


def upstream_exe(given: str | None) -> Path | None:
    for venv in (given, os.environ.get("VIVARY_UPSTREAM"), "/tmp/upstream", ".upstream"):
        if venv and (Path(venv) / "bin" / "tropo").is_file():
            return Path(venv) / "bin" / "tropo"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--upstream", help="virtualenv holding vivary-tropo 0.5.4")
    ap.add_argument("--skip-upstream", action="store_true")
    args = ap.parse_args()
    ours = [str(Path(sys.executable).parent / "tropo")]
    up = None if args.skip_upstream else upstream_exe(args.upstream)
    rows: list[tuple[str, float, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="tropo-bench-") as tmp:
        root = Path(tmp)
        corpus.init_repo(root)
        corpus.generate(root, args.nodes)
        base = corpus.commit(root, "generated")
        print(f"workspace: {args.nodes} nodes, {sum(1 for _ in root.rglob('*.md'))} files", file=sys.stderr)

        wall, cpu, _ = run([*ours, *QUERY], root)
        rows.append(("tropo query, cold (builds parse cache and index)", wall, cpu, ""))
        q_wall, q_cpu, q_out = median_run([*ours, *QUERY], root, args.runs)
        rows.append(("tropo query, warm", q_wall, q_cpu, ""))
        f_wall, f_cpu, f_out = median_run([*ours, *FIND], root, args.runs)
        rows.append(("tropo find --budget 400, warm", f_wall, f_cpu, ""))
        if up is not None:
            for label, argv, mine, (w, c) in (("query", QUERY, q_out, (q_wall, q_cpu)),
                                              ("find --budget 400", FIND, f_out, (f_wall, f_cpu))):
                uw, uc, uout = run([str(up), *argv], root)
                same = json.loads(uout)["results"] == json.loads(mine)["results"]
                rows.append((f"vivary-tropo 0.5.4 {label}", uw, uc,
                             f"{uw / w:.0f}x wall, {uc / c:.0f}x CPU; same results: {same}"))

        edited = edit_ten(root, seed=11)
        head = corpus.commit(root, "ten edits")
        spec = f"{base}..{head}"
        wall, cpu, _ = run([*ours, "diff", spec, "--json"], root)
        rows.append(("tropo diff A..B (10 files), cold (a check state per side)", wall, cpu, ""))
        wall, cpu, out = median_run([*ours, "diff", spec, "--json"], root, args.runs)
        changed = json.loads(out)["counts"]["changed"]
        w_wall, w_cpu, whole = median_run([*ours, "diff", spec, "--json", "--no-cache"], root, args.runs)
        rows.append(("tropo diff A..B (10 files), warm", wall, cpu,
                     f"{changed} changed node(s) of {len(edited)} edited files; "
                     f"{w_wall / wall:.0f}x wall, {w_cpu / cpu:.0f}x CPU faster than whole graphs "
                     "built fresh; "
                     f"same output: {whole == out}"))
        rows.append(("tropo diff A..B (10 files), whole graphs built fresh (`--no-cache`)",
                     w_wall, w_cpu, ""))

    print(f"| {args.nodes} nodes, median of {args.runs} | wall s | CPU s | note |")
    print("|---|---:|---:|---|")
    for label, wall, cpu, note in rows:
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {note} |")


if __name__ == "__main__":
    main()
