"""One fanout run carried by 1, 2, 5 and 10 workers, each a separate `strato worker`
process on its own clone of one bare remote on this machine: throughput, speedup over
one worker, claim races lost, pushes rejected, and push/fetch time per item. Each
item's agent takes a fixed time (50 ms by default), so the ideal is linear in workers
until this machine's cores (git, Python and the agents share them) are the limit.

    python -m bench.distributed [--items 1000] [--workers 1,2,5,10] [--agent-ms 50]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.agents import write_agents
from strato.agents import trust
from strato.runs.service import Runs

SPEC = """\
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${finish.output}", contract: Note}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: %(concurrency)d
          isolation: none
          require: all
          merge: sequential
          steps:
            - {do: "work on ${item}", agent: claude, out: Note}
      - {id: finish, after: [fan], do: "sum up", agent: claude, out: Note}
"""
AGENT = "import json, sys, time\ntime.sleep(%(seconds)s)\nprint(json.dumps({'text': 'ok'}))\n"
BIN = Path(sys.executable).parent


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def machines(top: Path, count: int, agent_ms: int) -> list[Path]:
    """A bare remote holding a workspace whose agent sleeps ``agent_ms``, and ``count``
    clones of it, each with the agent approved as its person would approve it."""
    bare, seed = top / "remote.git", top / "seed"
    git(top, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(top, "clone", "-q", str(bare), str(seed))
    (seed / "agent.py").write_text(AGENT % {"seconds": agent_ms / 1000})
    write_agents(seed, f"[agents.claude]\nargv = {json.dumps([sys.executable, 'agent.py', '{prompt}'])}\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "workspace")
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")
    clones = [top / f"m{i}" for i in range(count)]
    for dest in clones:
        git(top, "clone", "-q", str(bare), str(dest))
        agents = dest / ".vivary" / "agents.toml"
        trust.approve(dest, "file", ".vivary/agents.toml", agents.read_bytes())
    return [seed, *clones]


def one(count: int, items: int, agent_ms: int, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        seed, *clones = machines(Path(tmp), count, agent_ms)
        spec = SPEC % {"concurrency": concurrency}
        Runs(seed).plan(spec, {"items": [f"i{n}" for n in range(items)]}, "bench")
        git(seed, "push", "-q", "origin", "refs/vivary/runs/bench/*:refs/vivary/runs/bench/*")
        start, cpu, load = time.perf_counter(), _children_cpu(), os.getloadavg()[0]
        procs = [subprocess.Popen([str(BIN / "strato"), "worker", "--remote", "origin", "--run", "bench",
                                   "--interval", "0.05", "--json"], cwd=root, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=os.environ.copy())
                 for root in clones]
        reports = [json.loads(p.communicate()[0]) for p in procs]
        wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
        status = reports[0]["runs"]["bench"]
        assert status == "completed", reports
    total = {key: sum(r.get(key, 0) for r in reports) for key in (
        "racesLost", "pushes", "pushesRejected", "headPushesRejected", "pushS", "fetchS", "done", "folds",
        "resultsFolded")}
    return {
        "workers": count, "items": items, "wallS": round(wall, 2), "itemsPerS": round(items / wall, 2),
        "racesLost": total["racesLost"], "pushes": total["pushes"], "pushesRejected": total["pushesRejected"],
        "headPushesRejected": total["headPushesRejected"],
        # results landed in claims and folded into the run head, several per push
        "folds": total["folds"],
        "perFold": round(total["resultsFolded"] / total["folds"], 1) if total["folds"] else 0,
        "pushMsPerItem": round(1000 * total["pushS"] / items, 1),
        "fetchMsPerItem": round(1000 * total["fetchS"] / items, 1),
        # every process the workers started (git, agents) counted: the machine's cost of an
        # item, whatever else shares the cores
        "cpuMsPerItem": round(1000 * cpu / items, 1),
        # the 1-minute load average as the row began and ended: what else shared the cores
        "load": [round(load, 1), round(os.getloadavg()[0], 1)],
    }


def _children_cpu() -> float:
    """CPU seconds of the waited-for descendants so far (workers, their git and agents)."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--workers", default="1,2,5,10")
    parser.add_argument("--agent-ms", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=10, help="the fanout's concurrency (global)")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for count in [int(w) for w in args.workers.split(",")]:
        row = one(count, args.items, args.agent_ms, args.concurrency)
        row["speedup"] = round(row["itemsPerS"] / rows[0]["itemsPerS"], 2) if rows else 1.0
        row["ofLinear"] = round(row["speedup"] / (count / rows[0]["workers"]), 2) if rows else 1.0
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{'workers':>7} {'items/s':>8} {'speedup':>8} {'of linear':>9} {'races lost':>10} "
          f"{'pushes':>7} {'rejected':>8} {'push ms/item':>12} {'fetch ms/item':>13} {'cpu ms/item':>11} "
          f"{'folds':>6} {'per fold':>8} {'load':>9}")
    for r in rows:
        print(f"{r['workers']:>7} {r['itemsPerS']:>8} {r['speedup']:>8} {r['ofLinear']:>9} "
              f"{r['racesLost']:>10} {r['pushes']:>7} {r['pushesRejected']:>8} {r['pushMsPerItem']:>12} "
              f"{r['fetchMsPerItem']:>13} {r['cpuMsPerItem']:>11} {r['folds']:>6} {r['perFold']:>8} "
              f"{'-'.join(map(str, r['load'])):>9}")


if __name__ == "__main__":
    main()
