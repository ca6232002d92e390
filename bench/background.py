"""Background runs against foreground runs of the same spec, timed in the same run: a
four-dispatch flow whose agent answers at once, driven by `Runs.drive` in this process
and by a detached runner (`strato.runs.background.runner`) polled every 20 ms. The difference is
the price of surviving kill -9: a runner process per run and a dispatch process per step.

    python -m bench.background [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.agents import write_agents
from strato.runs.background import runner as background
from strato.runs.service import Runs

SPEC = """\
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {tag: string}
    output: {from: "${d.output}", contract: Note}
    steps:
      - {id: a, do: "a ${input.tag}", agent: claude, out: Note}
      - {id: b, do: "b ${input.tag}", agent: claude, out: Note, after: [a]}
      - {id: c, do: "c ${input.tag}", agent: claude, out: Note, after: [b]}
      - {id: d, do: "d ${input.tag}", agent: claude, out: Note, after: [c]}
"""
AGENT = 'import json; print(json.dumps({"text": "ok"}))\n'
POLL_S = 0.02


def workspace(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "agent.py").write_text(AGENT)
    argv = [sys.executable, "agent.py", "{prompt}"]
    write_agents(root, f"[agents.claude]\nargv = {json.dumps(argv)}\n")
    return root


def foreground(root: Path, tag: str) -> float:
    start = time.perf_counter()
    runs = Runs(root)
    snap = runs.drive(runs.plan(SPEC, {"tag": tag}).snap.run_id)
    assert snap.state["status"] == "completed"
    return time.perf_counter() - start


def in_background(root: Path, tag: str) -> float:
    start = time.perf_counter()
    runs = Runs(root)
    run_id = background.start(runs, SPEC, {"tag": tag})
    while runs.load(run_id).state["status"] == "running":
        time.sleep(POLL_S)
    assert runs.load(run_id).state["status"] == "completed"
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bg-") as tmp:
        root = workspace(Path(tmp))
        fg = statistics.median(foreground(root, f"f{i}") for i in range(args.repeat))
        bg = statistics.median(in_background(root, f"b{i}") for i in range(args.repeat))
    print(f"4-step flow, median of {args.repeat}: foreground {fg * 1000:.0f} ms, "
          f"background {bg * 1000:.0f} ms (x{bg / fg:.1f}), {(bg - fg) / 4 * 1000:.0f} ms more per step")


if __name__ == "__main__":
    main()
