"""Replay reports against one run from many threads of this process, all released at
once when the GO file appears (so several processes start together).

Usage: replay_usage.py ROOT RUN GO THREADS CALL_JSON. CALL_JSON is
{"kind": "usage", "dispatchId", "usage"} or {"kind": "done", "step", "token", "result"};
threads alternate between it and an optional second call in ALT_JSON (argv 6).
Prints one JSON line per call: {"ok": status} or {"refused": code}."""

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from strato.runs.engine.state import Refused
from strato.runs.service import Runs
from strato.runs.views.documents import usage_view

root, run_id, go, threads = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
calls = [json.loads(a) for a in sys.argv[5:]]
lock = threading.Lock()
lines: list[str] = []


def one(call: dict[str, Any]) -> None:
    runs = Runs(root)  # each thread its own repository handle, as separate clients would
    while not go.exists():
        time.sleep(0.001)
    try:
        if call["kind"] == "usage":
            out = runs.usage_report(run_id, call["dispatchId"], call["usage"])
            line = {"ok": usage_view(runs, out, call["dispatchId"])["status"]}
        else:
            runs.done(run_id, call["step"], call["token"], call["result"])
            line = {"ok": "done"}
    except Refused as exc:
        line = {"refused": exc.code}
    with lock:
        lines.append(json.dumps(line))


workers = [threading.Thread(target=one, args=(calls[i % len(calls)],)) for i in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
print("\n".join(lines))
