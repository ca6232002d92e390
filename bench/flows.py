"""Flow transitions per second: runs stored as commits on a git ref (compare-and-swap)
against the approach we replaced, rewriting one JSON state file with fsync per
transition. Both drive the same engine through the same Python API in this process,
taking turns `--repeat` times (medians, wall and CPU time, the load before and after);
`--scale` times transitions of runs of several lengths in turns (is a transition's cost
flat in the run's length?); then the CLI path, one `strato flow done` process per transition, beside
what Python's start-up and the CLI's imports cost alone.

    python -m bench.flows [--steps 1000] [--items 100] [--repeat 1] [--cli 0]
    python -m bench.flows --steps 1000 --repeat 3 --items 20 --cli 5   # docs/benchmarks.md
    python -m bench.flows --steps 10 --repeat 1 --items 0 --scale 1000,10000 --scale-count 200
    python -m bench.flows --steps 10000 --repeat 0 --items 0 --cli 5   # the CLI path, long run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from bench.agents import write_agents
from strato.runs.service import Runs
from strato.runs.store import RunSnapshot, Transition

T = TypeVar("T")


class FsyncJsonStore:
    """The baseline: one JSON file per run, rewritten (tmp + fsync + rename) per
    transition, with the event log inside the file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.specs: dict[str, str] = {}

    def _write(self, run_id: str, doc: dict[str, Any]) -> None:
        path = self.folder / f"{run_id}.json"
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(doc, fh, separators=(",", ":"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def _read(self, run_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((self.folder / f"{run_id}.json").read_text())
        return doc

    def create(self, run_id: str, state: dict[str, Any], spec_yaml: str, message: dict[str, Any]) -> str:
        self.specs[run_id] = spec_yaml
        self._write(run_id, {"seq": 1, "state": state, "log": [message]})
        return "1"

    def resolve(self, run_id: str) -> str:
        """Run ids are full here: the benchmark never names a run by a prefix."""
        return run_id

    def load(self, run_id: str) -> RunSnapshot:
        doc = self._read(run_id)
        return RunSnapshot(run_id, str(doc["seq"]), doc["state"])

    def spec_key(self, snap: RunSnapshot) -> str:
        return snap.run_id

    def spec_text(self, snap: RunSnapshot) -> str:
        return self.specs[snap.run_id]

    def transition(self, snap: RunSnapshot, state: dict[str, Any], message: dict[str, Any]) -> RunSnapshot:
        doc = self._read(snap.run_id)
        doc["seq"] += 1
        doc["state"] = state
        doc["log"].append(message)
        self._write(snap.run_id, doc)
        return RunSnapshot(snap.run_id, str(doc["seq"]), state)

    def update(
        self, run_id: str, op: str, decide: Callable[[RunSnapshot], Iterable[Transition]]
    ) -> RunSnapshot:
        """One writer, so no race to retry: load, decide, write each transition."""
        snap = self.load(run_id)
        for change in decide(snap):
            snap = self.transition(snap, *change)
        return snap

    def history(self, run_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        return iter([(str(i), m) for i, m in enumerate(self._read(run_id)["log"])])


def linear_spec(n: int) -> str:
    steps = "".join(
        f"      - id: s{i}\n        do: step {i}\n        out: R\n"
        + (f"        after: [s{i - 1}]\n" if i else "")
        for i in range(n)
    )
    return (
        "version: 1\ncontracts:\n  R: {n: integer}\nflows:\n  entry: main\n  main:\n    input: {}\n"
        f'    output: {{from: "${{s{n - 1}.output}}", contract: R}}\n    steps:\n{steps}'
    )


FANOUT_SPEC = """version: 1
contracts:
  V: {v: integer}
flows:
  entry: main
  main:
    input: {items: "integer[]"}
    output: {from: "${fan.output[0]}", contract: V}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 4
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "item ${item}"
              out: V
"""


def drive_linear(runs: Runs, spec: str) -> tuple[str, int, float, float]:
    """Plan the flow and report every step's result: the run, its transitions, and the
    wall and CPU seconds they took."""
    start, cpu = time.perf_counter(), time.process_time()
    run_id = runs.plan(spec, {}).snap.run_id
    transitions = 1
    snap = runs.load(run_id)
    while snap.state["status"] == "running":
        entry = runs.engine(snap, judge=False).ready()[0]
        snap = runs.done(run_id, entry["id"], entry["dispatchToken"], {"output": {"n": 1}}).snap
        transitions += 1
    assert snap.state["status"] == "completed"
    return run_id, transitions, time.perf_counter() - start, time.process_time() - cpu


Scaled = tuple[float, float, int, int]  # CPU and wall seconds, objects written, state bytes


def scale(runs: Runs, lengths: list[int], count: int, warm: int = 5) -> dict[int, Scaled]:
    """Linear runs of each length, their transitions taken in turns (the machine's load
    falls on all alike): per length the median CPU and wall seconds of `count`
    transitions after `warm` more, the objects the last one wrote to git (`git rev-list
    --objects` of its commit, not of its parent), and the state's size then. Is a
    transition's cost flat in the run's length?"""
    snaps = {n: runs.plan(linear_spec(n), {}).snap for n in lengths}
    cpu: dict[int, list[float]] = {n: [] for n in lengths}
    wall: dict[int, list[float]] = {n: [] for n in lengths}
    for i in range(warm + count):
        for n in lengths:
            start, w = time.process_time(), time.perf_counter()
            entry = runs.engine(snaps[n], judge=False).ready()[0]
            result = {"output": {"n": 1}}
            snaps[n] = runs.done(snaps[n].run_id, entry["id"], entry["dispatchToken"], result).snap
            if i >= warm:
                cpu[n].append(time.process_time() - start)
                wall[n].append(time.perf_counter() - w)
    out = {}
    for n, snap in snaps.items():
        listed = subprocess.run(["git", "rev-list", "--objects", snap.head, f"^{snap.head}~1"], cwd=runs.root,
                                check=True, capture_output=True, text=True).stdout.split("\n")
        size = len(json.dumps(snap.state, sort_keys=True, separators=(",", ":")))
        objects = sum(1 for line in listed if line)
        out[n] = (statistics.median(cpu[n]), statistics.median(wall[n]), objects, size)
    return out


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run one process: its wall and CPU seconds and what it printed."""
    start, cpu = time.perf_counter(), children_cpu()
    out = subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, children_cpu() - cpu, out


def drive_cli(root: Path, spec: str, count: int) -> dict[str, tuple[float, float]]:
    """The CLI path: `count` transitions, each one `strato flow done` process, beside a
    bare interpreter and one that only imports the CLI. Medians (wall, CPU) per process."""
    strato = str(Path(sys.executable).with_name("strato"))
    (root / "linear.yaml").write_text(spec)
    out = timed([strato, "flow", "plan", "linear.yaml", "--id", "cli-bench", "--json"], root)[2]
    done: list[tuple[float, float]] = []
    for _ in range(count):
        entry = json.loads(out)["ready"][0]
        result = json.dumps({"output": {"n": 1}})
        argv = [strato, "flow", "done", "cli-bench", entry["id"], "--token", entry["dispatchToken"],
                "--result", result, "--json"]
        wall, cpu, out = timed(argv, root)
        done.append((wall, cpu))
    bare = [timed([sys.executable, "-c", "pass"], root)[:2] for _ in range(count)]
    imports = [timed([sys.executable, "-c", "import strato.cli"], root)[:2] for _ in range(count)]
    return {name: (statistics.median(w for w, _ in rows), statistics.median(c for _, c in rows))
            for name, rows in (("python -c pass", bare), ("import strato.cli", imports),
                               ("strato flow done", done))}


def drive_fanout(runs: Runs, items: int) -> tuple[int, float]:
    start = time.perf_counter()
    run_id = runs.plan(FANOUT_SPEC, {"items": list(range(items))}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed", snap.state.get("failure")
    return sum(1 for _ in runs.store.history(run_id)), time.perf_counter() - start


def workspace(folder: Path) -> Path:
    root = folder / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    agent = [sys.executable, "-c", "import json; print(json.dumps({'v': 1}))", "{prompt}"]
    write_agents(root, f"[agents.claude]\nargv = {json.dumps(agent)}\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--items", type=int, default=100)
    # the defaults keep the one-run form bench.versus times across checkouts
    parser.add_argument("--repeat", type=int, default=1, help="linear runs per store (medians; 0: none)")
    parser.add_argument("--cli", type=int, default=0, help="transitions through the CLI (0: none)")
    parser.add_argument("--scale", default="", help="run lengths to time in turns: 1000,10000")
    parser.add_argument("--scale-count", type=int, default=100, help="transitions timed per length")
    args = parser.parse_args()
    spec = linear_spec(args.steps)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        git_runs = Runs(workspace(folder))
        json_runs = Runs(git_runs.root)
        (folder / "json").mkdir()
        json_runs.store = FsyncJsonStore(folder / "json")  # type: ignore[assignment]
        stores = (("git ref (CAS commits)", git_runs), ("JSON file + fsync", json_runs))

        print(f"linear flow, {args.steps} steps, {args.repeat} runs per store, taking turns")
        per: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in stores}
        ratios = []
        for i in range(args.repeat):
            this = {}
            for name, runs in stores:
                run_id, n, secs, cpu = drive_linear(runs, spec)
                t0 = time.perf_counter()
                events = len(runs.audit(run_id)["events"])
                audit_s = time.perf_counter() - t0
                this[name] = secs / n
                per[name].append((secs / n, cpu / n))
                print(
                    f"  {i + 1}: {name:<24} {n} transitions in {secs:6.2f}s = {n / secs:7.1f}/s;"
                    f" per transition {secs / n * 1000:6.2f} ms wall, {cpu / n * 1000:6.2f} ms CPU;"
                    f" audit {events} events in {audit_s:.3f}s"
                )
            ratios.append(this[stores[0][0]] / this[stores[1][0]])
        for name, rows in per.items() if ratios else ():
            wall = statistics.median(w for w, _ in rows)
            cpu = statistics.median(c for _, c in rows)
            print(f"  median {name:<24} {1 / wall:7.1f}/s;"
                  f" {wall * 1000:6.2f} ms wall, {cpu * 1000:6.2f} ms CPU")
        if ratios:
            print(f"  git / baseline time per transition: {statistics.median(ratios):.2f}x median"
                  f" ({', '.join(f'{r:.2f}' for r in ratios)})")

        if args.items:
            fan = []
            for name, runs in stores:
                n, secs = drive_fanout(runs, args.items)
                fan.append((name, n, secs))
            print(f"fanout, {args.items} items, isolation none (one agent subprocess per item)")
            for name, n, secs in fan:
                print(f"  {name:<24} {n} transitions in {secs:6.2f}s = {n / secs:7.1f}/s")
            print(f"  git / baseline wall time: {fan[0][2] / fan[1][2]:.2f}x")

        if args.scale:
            lengths = [int(n) for n in args.scale.split(",")]
            print(f"linear runs of {', '.join(map(str, lengths))} steps, git ref store, {args.scale_count} "
                  "transitions each after 5, taking turns (medians per transition)")
            for steps, (cpu, wall, objects, size) in scale(git_runs, lengths, args.scale_count).items():
                print(f"  {steps:>6} steps: {cpu * 1000:7.2f} ms CPU, {wall * 1000:7.2f} ms wall;"
                      f" {objects} objects written; state {size / 1000:7.0f} KB")

        if args.cli:
            cli = drive_cli(git_runs.root, spec, args.cli)
            print(f"CLI path, {args.cli} processes each (medians per process)")
            for name, (wall, cpu) in cli.items():
                print(f"  {name:<24} {wall * 1000:7.1f} ms wall, {cpu * 1000:7.1f} ms CPU")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
