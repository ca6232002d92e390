"""Start, poll and cancel agent runs; each answer is one of the response shapes of
Stratum's `stratum_agent_run`, `stratum_agent_poll` and `stratum_cancel_agent_run`
(the CLI prints the same documents with --json)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strato.agentruns.runner import execute, launch
from strato.agentruns.store import RunDir, Store, valid_id
from strato.agents import groups
from strato.agents.config import load_config
from strato.agents.settings import SettingsError

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


@dataclass(frozen=True)
class Extras:
    """What Stratum's seed adds to a run request: per-call `settings` (refused before
    anything runs when the agent does not take one), the foreground run's own id
    (`cancellationId`) and the flow it works for (`flow`, which needs that id, so
    `stratum_flow_cancel` can stop it), and a background run's `peerLabel`."""

    settings: Mapping[str, Any] = field(default_factory=dict)
    cancellation_id: str | None = None
    flow: Mapping[str, Any] | None = None
    peer_label: str | None = None


def _refusal(extras: Extras, background: bool) -> str | None:
    if extras.peer_label is not None and not background:
        return "peerLabel names a background run: a foreground run refuses it"
    if extras.cancellation_id is not None and background:
        return "cancellationId names a foreground run: a background run's runId is its id"
    if extras.cancellation_id is not None and not valid_id(extras.cancellation_id):
        return "cancellationId must be a fresh lowercase UUID"
    if extras.flow is not None and extras.cancellation_id is None:
        return "flow needs a cancellationId: without a run of its own there is no process group to cancel"
    return None


def peer_label(text: str) -> str:
    """A label as a display hint: lowercase, every run of other characters one `-`."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64]


def start(
    store: Store, root: Path, agent: str, prompt: str, cwd: str = ".",
    model: str | None = None, sandbox_mode: str | None = None, background: bool = False,
    extras: Extras = Extras(),
) -> Document:
    """`complete`, or `bg_started` at once when `background`; a foreground error is the
    poll's `error` document (Stratum's surface lists no error variant for a run)."""
    spec = load_config(root).get(agent)  # unknown, bad or unapproved: refused before any file
    if (why := _refusal(extras, background)) is not None:
        raise AgentRunError(why)
    try:
        spec.argv_for(prompt, given=extras.settings)
    except SettingsError as exc:
        raise AgentRunError(str(exc)) from None
    request = {
        "agent": agent, "prompt": prompt, "cwd": str(_inside(root, cwd)), "model": model,
        "sandboxMode": sandbox_mode, "background": background, "createdAt": time.time(),
        "settings": dict(extras.settings), "flow": dict(extras.flow) if extras.flow else None,
        "peerLabel": peer_label(extras.peer_label) if extras.peer_label else None,
    }
    try:
        run = store.create(request, extras.cancellation_id)
    except FileExistsError:
        raise AgentRunError(f"cancellationId {extras.cancellation_id} already names a run") from None
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


def cancel(store: Store, run_id: str, by: str, grace_s: float | None = None) -> Document:
    """Stop the agent's whole process group and record the run as cancelled (SIGKILL after
    `grace_s`, None: `groups.grace()`)."""
    grace_s = groups.grace() if grace_s is None else grace_s
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


def stop_flow(store: Store, run_id: str, by: str) -> dict[str, int]:
    """Stop every agent run a flow claimed (`flow.runId`), each process group to the end:
    how many it `claimed`, `reaped` (stopped by this call), found `gone` (ended before
    it), and left `unresolved` (a member of its group still alive)."""
    counts = {"claimed": 0, "reaped": 0, "gone": 0, "unresolved": 0}
    for run in store.all():
        flow = run.request().get("flow")
        if not isinstance(flow, dict) or flow.get("runId") != run_id:
            continue
        counts["claimed"] += 1
        ended = run.result() is not None
        answer = cancel(store, run.id, by)["status"]
        proc = run.proc()
        if proc is not None and groups.members(int(proc["pgid"])):
            counts["unresolved"] += 1
        else:
            counts["reaped" if answer == "cancelled" and not ended else "gone"] += 1
    return counts
