"""Subprocess for the crash and race tests: drives runs in consumer mode forever
(or reports one result), so the test can kill it with SIGKILL at any moment."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from strato.runs.engine.state import Refused
from strato.runs.service import Runs


def loop(root: Path, spec: str) -> None:
    """Plan runs and complete them one transition at a time, forever."""
    runs = Runs(root)
    while True:
        run_id = runs.plan(spec, {}).snap.run_id
        while True:
            ready = runs.engine(runs.load(run_id)).ready()
            if not ready:
                break
            entry = ready[0]
            runs.done(run_id, entry["id"], entry["dispatchToken"], {"output": {"n": entry["attempt"]}})
            print("transition", flush=True)


def race(root: Path, run_id: str, step: str, token: str, go: Path) -> None:
    """Wait for the start line, then report; print whether this process won."""
    runs = Runs(root)
    print("ready", flush=True)  # the test starts the race once every racer is here
    while not go.exists():
        pass
    try:
        runs.done(run_id, step, token, {"output": {"n": 1}})
        print(json.dumps({"won": True}))
    except Refused as exc:
        print(json.dumps({"won": False, "code": exc.code}))


if __name__ == "__main__":
    if sys.argv[1] == "loop":
        loop(Path(sys.argv[2]), Path(sys.argv[3]).read_text())
    else:
        race(Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], Path(sys.argv[6]))
