"""Workspaces for background runs: the agent is a small Python script playing a slow, a
wrong, a silent or a hostile agent, that appends one line per call to `calls-<tag>.log`
(so a test counts dispatches by their side effect); the hostile one writes every pid it
forks to `pids-<tag>.txt`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pygit2

from strato.runs.background import runner as background
from strato.runs.engine.state import RUN_TERMINAL
from strato.runs.service import Runs
from tests.support import console
from tests.support.approvals import approve_agents
from tests.support.repos import commit_all, write_files

T = TypeVar("T")

# One script plays every agent; the first word of the step's `do` says which. The
# specs name the built-in `claude`, so they stay valid outside this workspace too.
PLAY = """
import json, os, signal, sys, time
mode, step, tag = sys.argv[1].split()[:3]
log = os.path.join(os.environ.get("CALLS_DIR", "."), f"calls-{tag}.log")  # one log for many clones
with open(log, "a") as fh:
    fh.write(f"{step} {os.getpid()}\\n")
mine = sum(1 for line in open(log) if line.split()[0] == step)
if mode == "slow":  # takes a while (long enough for a kill to land mid-call), then answers
    time.sleep(float(os.environ.get("SLOW_S", "0.3")))
    print(json.dumps({"text": f"{step} done"}))
elif mode == "wrong":  # wrong the first time it is asked for a step, right the second
    time.sleep(0.1)
    print(json.dumps({"text": "right" if mine >= 2 else "wrong"}))
elif mode == "hostile":  # ignores SIGTERM, forks three children that ignore it too, never answers
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for _ in range(3):
        if os.fork() == 0:
            break
    with open(f"pids-{tag}.txt", "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    while True:
        time.sleep(1)
elif mode in ("escape", "leave"):  # a child in a session of its own (fork, setsid, fork), which
    if os.fork() == 0:  # ignores SIGTERM and keeps stdout open; then hangs, or answers and exits
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            with open(f"escaped-{tag}.txt", "a") as fh:
                fh.write(f"{os.getpid()}\\n")
            while True:
                time.sleep(1)
        os._exit(0)
    os.wait()
    with open(f"pids-{tag}.txt", "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    while mode == "escape":
        time.sleep(1)
    print(json.dumps({"text": f"{step} done"}))
elif mode == "write":  # edits the tree it runs in (a fanout worktree): `<step>.txt`, `shared.txt`
    go = os.environ.get("GO_FILE")  # for a `clash` step; first waits for GO_FILE when it is set
    while go and not os.path.exists(go):
        time.sleep(0.02)
    time.sleep(float(os.environ.get("SLOW_S", "0.3")))
    with open("shared.txt" if step.startswith("clash") else f"{step}.txt", "w") as fh:
        fh.write(f"{step} {tag}\\n")
    print(json.dumps({"text": f"{step} done"}))
# "silent": exits 0 without printing anything
"""

STEPS_SPEC = """\
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      tag: string
    output:
      from: "${finish.output}"
      contract: Note
    steps:
      - id: draft
        do: "slow draft ${input.tag}"
        agent: claude
        out: Note
      - id: fix
        after: [draft]
        do: "wrong fix ${input.tag}"
        agent: claude
        out: Note
        ensure:
          - expr: "result.text == 'right'"
        attempts: 3
      - id: finish
        after: [fix]
        do: "slow finish ${input.tag}"
        agent: claude
        out: Note
"""

GATED_SPEC = """\
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      tag: string
    output:
      from: "${draft.output}"
      contract: Note
    max_rounds: 3
    steps:
      - id: draft
        do: "slow draft ${input.tag}"
        agent: claude
        out: Note
      - id: review
        after: [draft]
        gate:
          on_approve: null
          on_revise: draft
          on_kill: null
"""


def fanout_spec(mode: str = "slow") -> str:
    """A fanout over `input.items` (two at a time, in the workspace): each item's first
    stage plays `mode`, its second is wrong once; then one step after it."""
    return f"""\
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      tag: string
      items: "string[]"
    output:
      from: "${{finish.output}}"
      contract: Note
    steps:
      - id: fan
        fanout:
          over: "${{input.items}}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "{mode} ${{item}} ${{input.tag}}"
              agent: claude
              out: Note
            - do: "wrong ${{item}}-check ${{input.tag}}"
              agent: claude
              out: Note
              ensure:
                - expr: "result.text == 'right'"
              attempts: 3
      - id: finish
        after: [fan]
        do: "slow finish ${{input.tag}}"
        agent: claude
        out: Note
"""


def one_step_spec(mode: str) -> str:
    return f"""\
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      tag: string
    output:
      from: "${{work.output}}"
      contract: Note
    steps:
      - id: work
        do: "{mode} work ${{input.tag}}"
        agent: claude
        out: Note
        attempts: 2
"""


def make_workspace(root: Path) -> Path:
    toml = f'[agents.claude]\nargv = [{json.dumps(sys.executable)}, "agents/play.py", "{{prompt}}"]\n'
    write_files(root, {
        "agents/play.py": PLAY, ".vivary/agents.toml": toml, "specs/steps.yaml": STEPS_SPEC,
        "specs/gated.yaml": GATED_SPEC, ".gitignore": "calls-*.log\npids-*.txt\nescaped-*.txt\n",
    })
    commit_all(root, "workspace")
    approve_agents(root)
    return root


def calls(root: Path, tag: str) -> list[str]:
    """The steps dispatched for run `tag`, one per agent process started, in order."""
    log = root / f"calls-{tag}.log"
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def pids(root: Path, tag: str, kind: str = "pids") -> list[int]:
    """The pids the agents of run `tag` wrote down (`escaped`: their children that left
    the agent's process group)."""
    path = root / f"{kind}-{tag}.txt"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def kill_hostiles(root: Path) -> None:
    """A failed test must not leave an agent that ignores SIGTERM running."""
    for path in [*root.glob("pids-*.txt"), *root.glob("escaped-*.txt")]:
        for pid in path.read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def wait_for(condition: Callable[[], T | None], what: str, bound_s: float = 180) -> T:
    """Poll a condition until it gives a true value, and return that; the bound only
    keeps a broken run from hanging the suite."""
    deadline = time.monotonic() + bound_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)
    assert value is not None  # the loop ends only on a true value
    return value


def ended(root: Path, run_id: str) -> dict[str, Any]:
    """Poll a background run (which restarts a dead runner) until it ends: its poll document."""
    def done() -> dict[str, Any] | None:
        doc = background.poll(Runs(root), run_id)
        return doc if doc["bg"]["status"] in RUN_TERMINAL else None
    return wait_for(done, f"run {run_id} ends")


def strato(root: Path, *args: str, stdin: str | None = None) -> tuple[int, Any, str]:
    """`strato ARGS --root ROOT --json` in process: (exit code, its JSON, stderr). The
    runners it starts are real detached processes all the same."""
    proc = console.run("strato", *args, "--root", root, "--json", input=stdin)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def runner_pid(root: Path, run_id: str) -> int | None:
    path = root / ".git" / "vivary" / "bg" / run_id / "runner.pid"
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def is_runner(pid: int) -> bool:
    """`pid` is a live background runner (not a zombie, not a reused pid)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X") and b"strato.runs.background.runner" in cmdline


PROCESSES, THREADS = 4, 25  # writers racing on one dispatch's usage: processes, threads each
REPLAY = Path(__file__).parents[1] / "strato" / "runs" / "scripts" / "replay_usage.py"


def replay_usage(root: Path, go: Path, *calls: dict[str, Any]) -> Counter[str]:
    procs = [
        subprocess.Popen(
            [sys.executable, str(REPLAY), str(root), "r1", str(go), str(THREADS), *map(json.dumps, calls)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    go.touch()  # release every thread of every process together
    seen: Counter[str] = Counter()
    for proc in procs:
        out, _ = proc.communicate()
        assert proc.returncode == 0
        for line in out.splitlines():
            answer = json.loads(line)
            seen[answer.get("ok") or f"refused:{answer['refused']}"] += 1
    return seen


def newer_format(repo_path: Path, ref: str) -> str:
    """A transition on ``ref`` as a later version of strato would write it: a layout
    this version does not know (format 4). Its commit id."""
    repo = pygit2.Repository(str(repo_path))
    head = repo.references[ref].peel(pygit2.Commit)
    inner = repo.TreeBuilder(repo[head.tree["state"].id])
    inner.insert("layout.json", repo.create_blob(b'{"format":4,"tables":[]}'), pygit2.GIT_FILEMODE_BLOB)
    top = repo.TreeBuilder(head.tree)
    top.insert("state", inner.write(), pygit2.GIT_FILEMODE_TREE)
    sig = pygit2.Signature("later", "later@example.com")
    commit = repo.create_commit(None, sig, sig, "run: done\n\n{}\n", top.write(), [head.id])
    repo.references[ref].set_target(commit)
    return str(commit)

