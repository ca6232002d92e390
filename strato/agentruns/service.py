"""Start, poll and cancel agent runs; each answer is one of the response shapes of
Stratum's `stratum_agent_run`, `stratum_agent_poll` and `stratum_cancel_agent_run`
(the CLI prints the same documents with --json)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from strato.agentruns.runner import execute, launch
from strato.agentruns.store import RunDir, Store
from strato.agents import groups
from strato.agents.config import load_config

TEXT_TAIL = 4096
Document = dict[str, Any]


class AgentRunError(Exception):
    """A request that cannot start (unknown agent, cwd outside the workspace)."""


def _inside(root: Path, cwd: str) -> Path:
    try:
        path: Path | None = (root / cwd).resolve()
    except (ValueError, OSError):  # a NUL byte, a symlink loop: no folder at all
        path = None
    if path is None or not path.is_dir() or not path.is_relative_to(root.resolve()):
        raise AgentRunError(f"cwd {cwd!r} is not a folder inside the workspace")
    return path


def start(
    store: Store, root: Path, agent: str, prompt: str, cwd: str = ".",
    model: str | None = None, sandbox_mode: str | None = None, background: bool = False,
) -> Document:
    """`complete`, or `bg_started` at once when `background`; a foreground error is the
    poll's `error` document (Stratum's surface lists no error variant for a run)."""
    load_config(root).get(agent)  # unknown, bad or unapproved: refused before any file
    request = {
        "agent": agent, "prompt": prompt, "cwd": str(_inside(root, cwd)), "model": model,
        "sandboxMode": sandbox_mode, "background": background, "createdAt": time.time(),
    }
    run = store.create(request)
    if background:
        pid = launch(run, root)
        return {"status": "bg_started", "runId": run.id, "pid": pid, "streamPath": str(run.stream)}
    execute(run, root)
    doc = poll(store, run.id)
    if doc["status"] == "complete":
        return {k: doc[k] for k in ("status", "text", "usage", "telemetry")}
    return doc


def poll(store: Store, run_id: str) -> Document:
    run = store.get(run_id)
    if run is None:
        return {"status": "not_found", "runId": run_id}
    result = run.result()
    if result is None and _orphaned(run):
        run.finish({"status": "error", "reason": "runner died before the agent finished"})
        result = run.result()
    tail = run.tail(run.stream, TEXT_TAIL)
    if result is None:
        return {"status": "running", "runId": run.id, "textTail": tail,
                "eventsSeen": run.progress(), "streamPath": str(run.stream)}
    if result["status"] == "complete":
        return {"status": "complete", "runId": run.id, "text": result["text"], "usage": result["usage"],
                "exitCode": result["exitCode"], "telemetry": result["telemetry"]}
    doc: Document = {"status": "error", "runId": run.id, "textTail": tail,
                     "stderrTail": run.tail(run.stderr, TEXT_TAIL), "reason": result["reason"],
                     "eventsSeen": run.progress(), "streamPath": str(run.stream)}
    for key in ("exitCode", "telemetry"):
        if result.get(key) is not None:
            doc[key] = result[key]
    return doc


def _orphaned(run: RunDir) -> bool:
    """No result, and nobody left to write one: the runner and its agent are gone."""
    runner, proc = run.runner(), run.proc()
    if runner is not None and groups.alive(runner):
        return False
    return proc is None or not groups.members(int(proc["pgid"]))


def cancel(store: Store, run_id: str, by: str, grace_s: float = groups.GRACE_S) -> Document:
    """Stop the agent's whole process group and record the run as cancelled."""
    run = store.get(run_id)
    if run is None:
        return {"status": "not_found", "runId": run_id}
    if (done := run.result()) is not None:
        return {"status": f"already_{done['status']}", "runId": run.id}
    run.request_cancel(by)
    proc = run.proc()
    if proc is not None:
        groups.stop(int(proc["pgid"]), grace_s)
    runner, until = run.runner(), time.monotonic() + grace_s + 10
    while run.result() is None and runner is not None and groups.alive(runner) and time.monotonic() < until:
        time.sleep(0.05)  # the runner records the cancel with the exit code it saw
    run.finish({"status": "error", "reason": f"cancelled by {by}"})  # a runner may have won
    done = run.result() or {}
    if done.get("status") == "complete":
        return {"status": "already_complete", "runId": run.id}
    return {"status": "cancelled", "runId": run.id}
