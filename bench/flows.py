"""Flow transitions per second: runs stored as commits on a git ref (compare-and-swap)
against the approach we replaced, rewriting one JSON state file with fsync per
transition. Both drive the same engine through the same Python API in this process.

    python -m bench.flows [--steps 1000] [--items 100]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
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
        self, run_id: str, op: str, decide: Callable[[RunSnapshot], tuple[Transition | None, T]]
    ) -> tuple[RunSnapshot, T]:
        """One writer, so no race to retry: load, decide, write."""
        snap = self.load(run_id)
        change, value = decide(snap)
        return (snap if change is None else self.transition(snap, *change)), value

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


def drive_linear(runs: Runs, spec: str) -> tuple[str, int, float]:
    start = time.perf_counter()
    run_id = runs.plan(spec, {}).snap.run_id
    transitions = 1
    snap = runs.load(run_id)
    while snap.state["status"] == "running":
        entry = runs.engine(snap, judge=False).ready()[0]
        snap = runs.done(run_id, entry["id"], entry["dispatchToken"], {"output": {"n": 1}}).snap
        transitions += 1
    assert snap.state["status"] == "completed"
    return run_id, transitions, time.perf_counter() - start


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
    args = parser.parse_args()
    spec = linear_spec(args.steps)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        git_runs = Runs(workspace(folder))
        json_runs = Runs(git_runs.root)
        (folder / "json").mkdir()
        json_runs.store = FsyncJsonStore(folder / "json")  # type: ignore[assignment]

        rows = []
        for name, runs in (("git ref (CAS commits)", git_runs), ("JSON file + fsync", json_runs)):
            run_id, n, secs = drive_linear(runs, spec)
            t0 = time.perf_counter()
            events = len(runs.audit(run_id)["events"])
            audit_s = time.perf_counter() - t0
            rows.append((name, n, secs, audit_s, events))
        print(f"linear flow, {args.steps} steps")
        for name, n, secs, audit_s, events in rows:
            print(
                f"  {name:<24} {n} transitions in {secs:6.2f}s = {n / secs:7.1f}/s;"
                f" per transition {secs / n * 1000:6.2f} ms; audit {events} events in {audit_s:.3f}s"
            )
        ratio = (rows[0][2] / rows[0][1]) / (rows[1][2] / rows[1][1])
        print(f"  git / baseline time per transition: {ratio:.2f}x (target <= 3x)")

        fan = []
        for name, runs in (("git ref (CAS commits)", git_runs), ("JSON file + fsync", json_runs)):
            n, secs = drive_fanout(runs, args.items)
            fan.append((name, n, secs))
        print(f"fanout, {args.items} items, isolation none (one agent subprocess per item)")
        for name, n, secs in fan:
            print(f"  {name:<24} {n} transitions in {secs:6.2f}s = {n / secs:7.1f}/s")
        print(f"  git / baseline wall time: {fan[0][2] / fan[1][2]:.2f}x")


if __name__ == "__main__":
    main()
