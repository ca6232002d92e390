"""Workspaces whose agents are small Python scripts playing an agent that streams, waits,
floods, crashes or ignores SIGTERM (the agent runs of `strato agent`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.approvals import approve_agents

AGENTS = {
    # prints two events and an answer, then waits for the file `go` when asked to
    "steady": """
import json, os, sys, time
print(json.dumps({"type": "event", "n": 1}), flush=True)
print(json.dumps({"type": "event", "n": 2}), flush=True)
if sys.argv[1] == "wait":
    while not os.path.exists("go"):
        time.sleep(0.05)
print(json.dumps({"type": "result", "result": "done: " + sys.argv[1], "total_cost_usd": 0.25,
                  "usage": {"input_tokens": 10, "output_tokens": 5}}), flush=True)
""",
    # forks three children; all of them ignore SIGTERM; every pid goes to pids.txt
    "hostile": """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for _ in range(3):
    if os.fork() == 0:
        break
with open("pids.txt", "a") as fh:
    fh.write(f"{os.getpid()}\\n")
print("still here", flush=True)
while True:
    time.sleep(1)
""",
    # 100 MB to its stream, then its answer
    "flood": """
import sys
line = b"x" * 1023 + b"\\n"
for _ in range(100 * 1024):
    sys.stdout.buffer.write(line)
sys.stdout.buffer.write(b"the end\\n")
""",
    "silent": "pass\n",
    "crash": "import sys\nprint('half an answer')\nprint('boom: disk on fire', file=sys.stderr)\nsys.exit(3)\n",
}


def agents_toml(extra: str = "") -> str:
    lines = []
    for name in AGENTS:
        lines.append(f'[agents.{name}]\nargv = [{json.dumps(sys.executable)}, "agents/{name}.py", "{{prompt}}"]\n')
    return "\n".join(lines) + extra


def agent_workspace(repo_dir: Path) -> Iterator[Path]:
    """`repo_dir` with the scripted agents approved; kills what a hostile one left behind."""
    (repo_dir / "agents").mkdir()
    for name, body in AGENTS.items():
        (repo_dir / "agents" / f"{name}.py").write_text(body)
    (repo_dir / ".vivary").mkdir(exist_ok=True)
    extra = f'\n[agents.sleepy]\nargv = [{json.dumps(sys.executable)}, "agents/hostile.py", "{{prompt}}"]\ntimeout_s = 1\n'
    (repo_dir / ".vivary" / "agents.toml").write_text(agents_toml(extra))
    approve_agents(repo_dir)
    yield repo_dir
    pids = repo_dir / "pids.txt"  # a failed test must not leave a hostile agent running
    for pid in pids.read_text().split() if pids.exists() else []:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
