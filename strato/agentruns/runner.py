"""Running one agent run to its end, in the caller (foreground) or in a detached runner
process (``python -m strato.agentruns.runner RUNDIR``, its own session, so it lives on
after the caller exits). The agent gets a session of its own: its group is what a
timeout or a cancel stops."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from strato.agentruns.store import BoundedStream, RunDir
from strato.agents import groups, trust
from strato.agents.calls import start_failure, usage
from strato.agents.config import AgentConfigError, load_config
from strato.agents.interpreter import own_python
from strato.agents.lastjson import last_json_object
from strato.agents.process import run_process, spawn
from strato.agents.settings import SettingsError


def launch(run: RunDir, root: Path) -> int:
    """Start the detached runner; its pid."""
    pid = spawn(own_python("-m", "strato.agentruns.runner", str(run.path), str(root)), cwd=root)
    run.set_runner(pid)
    return pid


def execute(run: RunDir, root: Path) -> dict[str, Any]:
    """Run the recorded request once and record its outcome (or the one a cancel recorded)."""
    req = run.request()
    if run.runner() is None:  # foreground: the caller is the runner
        run.set_runner(os.getpid())
    started = time.monotonic()
    try:  # checked again here: the file may have changed since the run was asked for
        spec = load_config(root).get(req["agent"])
    except (trust.Untrusted, trust.TrustError, AgentConfigError) as exc:
        run.finish(_error(req, str(exc), started))
        return run.result() or {}
    env = dict(os.environ)
    if req.get("model"):
        env["VIVARY_AGENT_MODEL"] = req["model"]
    if spec.endpoint is not None:  # the model that answers is the configured one, whatever was asked
        req = {**req, "model": spec.endpoint.model}

    def begun(pgid: int) -> None:
        run.set_proc(pgid)
        if run.cancel_requested():  # a cancel that came before the pgid was on disk
            groups.stop(pgid)

    events = _Events(run)

    def streams() -> tuple[_Events, BoundedStream]:
        events.sink = BoundedStream(run.stream)
        return events, BoundedStream(run.stderr)

    try:  # the settings again: the agent's entry may have changed since
        argv = spec.argv_for(req["prompt"], given=req.get("settings") or {})
    except SettingsError as exc:
        run.finish(_error(req, str(exc), started))
        return run.result() or {}
    done = run_process(  # at its end, children it left behind; at a timeout, the whole group
        argv, Path(req["cwd"]), spec.timeout_s, env=env,
        on_start=begun, stop=groups.stop, copies=streams,
    )
    if isinstance(done, str):
        run.finish(_error(req, start_failure(spec, done), started))
        return run.result() or {}
    run.set_progress(events.seen)
    run.finish(_outcome(run, req, done.returncode, done.stdout, events.seen, started, spec.timeout_s))
    return run.result() or {}


class _Events:
    """The agent's stdout on its way to the bounded file: the lines that are JSON
    objects (a streaming agent's events) are counted, and the count recorded."""

    sink: BoundedStream  # opened once the agent has started

    def __init__(self, run: RunDir) -> None:
        self.run = run
        self.pending = b""
        self.seen = 0

    def write(self, chunk: bytes) -> None:
        self.sink.write(chunk)
        *lines, pending = (self.pending + chunk).split(b"\n")
        self.pending = pending[-(1 << 20) :]
        seen = sum(1 for line in lines if _is_event(line))
        if seen:  # at most one small write per chunk read
            self.seen += seen
            self.run.set_progress(self.seen)

    def close(self) -> None:
        self.sink.close()


def _is_event(line: bytes) -> bool:
    line = line.strip()
    if not line.startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _telemetry(req: dict[str, Any], started: float) -> dict[str, Any]:
    return {"durationMs": int((time.monotonic() - started) * 1000), "model": req.get("model") or req["agent"]}


def _error(req: dict[str, Any], reason: str, started: float) -> dict[str, Any]:
    return {"status": "error", "reason": reason, "telemetry": _telemetry(req, started)}


def _outcome(
    run: RunDir, req: dict[str, Any], code: int | None, stdout: str,
    events: int, started: float, timeout_s: float,
) -> dict[str, Any]:
    base = {"exitCode": code, "eventsSeen": events, "telemetry": _telemetry(req, started)}
    cancel = run.cancel_requested()
    if cancel is not None:
        return {**base, "status": "error", "reason": f"cancelled by {cancel['by']}"}
    if code is None:
        return {**base, "status": "error", "reason": f"timed out after {timeout_s:g}s"}
    if code != 0:
        return {**base, "status": "error", "reason": f"exited {code}"}
    if not stdout.strip():
        return {**base, "status": "error", "reason": "exited 0 without output"}
    text, usage = answer(stdout)
    return {**base, "status": "complete", "text": text, "usage": usage}


def answer(stdout: str) -> tuple[str, dict[str, float]]:
    """The agent's text: the Claude CLI's `result` string when it wraps its answer,
    else everything it printed (the last MiB); usage when the wrapper reports it."""
    found = last_json_object(stdout)
    if found is not None and found.get("type") == "result" and isinstance(found.get("result"), str):
        return found["result"], usage(found)
    return stdout.strip(), {}


def main() -> None:
    run, root = RunDir(Path(sys.argv[1])), Path(sys.argv[2])
    try:
        execute(run, root)
    except Exception as exc:  # detached: nobody reads stderr, so the record says it
        run.finish({"status": "error", "reason": f"runner failed: {type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
