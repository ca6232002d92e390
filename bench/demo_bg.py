"""`make demo`, background part: the reviewed flow started with `strato run --background`
returns at once; `strato flow poll` follows the detached runner from a cursor until the
run waits at its human gate, with no process left running."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.2
BOUND_S = 120  # only keeps a broken demo from hanging


def _strato(ws: Path, *args: str) -> dict[str, object]:
    argv = ["strato", *args, "--json"]
    print(f"$ {shlex.join(argv)}", flush=True)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, check=False)
    if not proc.stdout.strip():
        raise SystemExit(f"demo: {argv[1]} failed: {proc.stderr.strip()}")
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def tour(ws: Path) -> None:
    """Start the flow written by the flows part in the background and poll it to its gate."""
    print("\n== background: a detached runner drives the run; poll it from a cursor", flush=True)
    started = _strato(ws, "run", "flows/note.yaml", "--input", "topic=background runs", "--id", "demo-bg",
                      "--background")
    print(f"  started {started['runId']} ({started['status']})")
    cursor, deadline = 0, time.monotonic() + BOUND_S
    while True:
        doc = _strato(ws, "flow", "poll", "demo-bg", "--cursor", str(cursor))
        events = doc["events"]
        assert isinstance(events, list)
        for ev in events:
            print(f"  {ev['type']:<14} {ev.get('stepId', '')}")
        cursor = int(str(doc["nextCursor"]))
        bg = doc["bg"]
        assert isinstance(bg, dict)
        if bg["status"] != "running" or time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    print(f"  bg: {json.dumps(bg, sort_keys=True)}")
    print("  the runner has exited; `strato flow gate approve demo-bg review` would start one again")
