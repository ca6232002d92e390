"""Record the workbench's demo data (``workbench/demo/sample-run.json``) from a real run.

Builds `make demo`'s workspace quietly in a temporary folder (a workspace, a claim, a
guarded release with a signed override, the reviewed flow with its human gate, a
heartbeat proposal), then asks the workbench's own repository views what they show
after every transition of the flow run. ``vivary serve --demo`` replays those frames.

    python -m bench.workbench_demo            # rewrite the fixture
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import demo_exo, demo_flows, demo_guard, demo_heartbeat, demo_lifecycle
from bench.demo import Runner
from exo.workspace import load_worktree
from strato.runs.service import Runs
from tropo.git.types import Commit
from workbench.repo import RepoSource, detail, events_of, row

FIXTURE = Path(__file__).resolve().parent.parent / "workbench" / "demo" / "sample-run.json"
RUN = "demo-note"
BIN = Path(sys.executable).parent


def _quiet(ws: Path) -> Runner:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(argv: list[str], check: bool = False) -> None:
        subprocess.run(argv, cwd=ws, env=env, check=check,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    return run





def frames(root: Path) -> list[dict[str, Any]]:
    """What the runs views answered after each transition of the run."""
    runs = Runs(root)
    others = [r for r in runs.store.run_ids() if r != RUN]
    out = []
    for commit, _ in runs.store.history(RUN):
        snap = runs.store.at(RUN, commit)
        moved = int(runs.repo[commit].peel(Commit).commit_time)
        rows = [row(runs, snap, moved)] + [row(runs, runs.load(r), moved) for r in others]
        events = events_of(runs, commit)
        out.append({"runs": rows, "details": {RUN: detail(runs, snap, events, 0, len(events) or 1)}})
    return out


def graph_of(root: Path) -> dict[str, Any]:
    """The workspace graph itself (not a drawing of it: the demo draws it with the
    `tropo view` of the day)."""
    graph = load_worktree(root).graph
    nodes = [{"id": n.id, "type": n.type, "path": n.path, "title": n.title, "fields": n.fields}
             for n in graph.nodes.values()]
    return {"nodes": nodes, "edges": [list(e) for e in graph.edges]}


def record(root: Path) -> dict[str, Any]:
    source = RepoSource(root)
    return {
        "format": "vivary.workbench.demo.v1",
        "about": "recorded by `python -m bench.workbench_demo` from `make demo`'s workspace",
        "frames": frames(root),
        "board": source.board(),
        "guard": source.guard(),
        "review": source.review("HEAD~1", "HEAD"),
        "heartbeat": source.heartbeat(),
        "lanes": source.lanes(),
        "graph": graph_of(root),
    }


def build(tmp: Path) -> Path:
    ws = demo_lifecycle.tour(tmp, _quiet(tmp))
    run = _quiet(ws)
    demo_exo.tour(ws, run)
    demo_guard.tour(ws, run)
    demo_flows.tour(ws, run)
    demo_heartbeat.tour(ws, run)
    item = min(p.stem for p in (ws / "changes").glob("*.md"))
    run(["exo", "claim", item, "--agent", "@connie"], check=True)  # a claim held, for the board
    return ws


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="vivary-workbench-demo-") as tmp:
        data = record(build(Path(tmp)))
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False)
    FIXTURE.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE} ({len(data['frames'])} frames)")


if __name__ == "__main__":
    main()
