"""Workspaces whose agents are small Python scripts playing an agent: slow, wrong, hostile."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.approvals import approve_agents

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


@pytest.fixture
def workspace(repo_dir: Path) -> Iterator[Path]:
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


def strato(root: Path, *args: str) -> tuple[int, Any, str]:
    """Run `strato ARGS --root ROOT --json`: (exit code, its JSON, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "strato.cli", *args, "--root", str(root), "--json"],
        capture_output=True, text=True, check=False,
    )
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def wait_for(condition: Callable[[], Any], what: str, bound_s: float = 120) -> Any:
    """Poll a condition; the bound only keeps a broken run from hanging the suite."""
    deadline = time.monotonic() + bound_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)
    return value
