"""Review-pack benchmark: ``tropo review --pack all`` and ``tropo impact`` against the
suite's review layer (vivary-ozone 0.3.2) run in the same invocation on the same
synthetic workspace, cold, warm, and warm after ten uncommitted edits. Prints a Markdown
table (wall and CPU seconds of each whole process, median of --runs) and checks that both
tools print the same JSON.

    python -m bench.review --nodes 20000 [--runs 3] [--upstream .upstream] [--upstream-runs 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from bench import corpus
from bench.retrieval import edit_ten, median_run, run

REVIEW = ["review", "--pack", "all", "--json"]
IMPACT = ["impact", "n000000", "--json"]


def ozone_exe(given: str | None) -> Path | None:
    for venv in (given, os.environ.get("VIVARY_UPSTREAM"), ".upstream", "/tmp/upstream"):
        if venv and (Path(venv) / "bin" / "ozone").is_file():
            return (Path(venv) / "bin" / "ozone").absolute()
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--upstream", help="virtualenv holding vivary-ozone 0.3.2")
    ap.add_argument("--upstream-runs", type=int, default=1,
                    help="runs of the suite per row (it takes minutes at 20k nodes)")
    args = ap.parse_args()
    ours = [str(Path(sys.executable).parent / "tropo")]
    up = ozone_exe(args.upstream)
    rows: list[tuple[str, float, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="review-bench-") as tmp:
        root = Path(tmp)
        corpus.init_repo(root)
        corpus.generate(root, args.nodes)
        corpus.commit(root, "generated")

        def versus(label: str, argv: list[str], mine: str, wall: float, cpu: float) -> None:
            if up is None:
                return
            uw, uc, theirs = median_run([str(up), *argv], root, args.upstream_runs)
            rows.append((f"vivary-ozone 0.3.2 {label}", uw, uc,
                         f"{uw / wall:.1f}x our wall, {uc / cpu:.1f}x our CPU; "
                         f"same document: {theirs == mine}"))

        wall, cpu, _ = run([*ours, *REVIEW], root)
        rows.append(("tropo review --pack all, cold (parses every document)", wall, cpu, ""))
        wall, cpu, out = median_run([*ours, *REVIEW], root, args.runs)
        rows.append(("tropo review --pack all, warm (graph cache)", wall, cpu, ""))
        versus("review --pack all", REVIEW, out, wall, cpu)
        wall, cpu, out = median_run([*ours, *IMPACT], root, args.runs)
        rows.append(("tropo impact ID, warm", wall, cpu, ""))
        versus("impact ID", IMPACT, out, wall, cpu)

        edit_ten(root, seed=11)
        wall, cpu, _ = run([*ours, *REVIEW], root)
        rows.append(("tropo review --pack all, 10 uncommitted edits, first run", wall, cpu, ""))
        wall, cpu, out = median_run([*ours, *REVIEW], root, args.runs)
        rows.append(("tropo review --pack all, 10 uncommitted edits, warm", wall, cpu, ""))
        versus("review --pack all, 10 uncommitted edits", REVIEW, out, wall, cpu)
        wall, cpu, _ = median_run([*ours, *REVIEW, "--rev", "HEAD"], root, args.runs)
        rows.append(("tropo review --pack all --rev HEAD, warm", wall, cpu, ""))

    print(f"| {args.nodes} nodes, median of {args.runs} (suite: {args.upstream_runs}) "
          "| wall s | CPU s | note |")
    print("|---|---:|---:|---|")
    for label, wall, cpu, note in rows:
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {note} |")


if __name__ == "__main__":
    main()
