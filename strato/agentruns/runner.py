"""Running one agent run to its end, in the caller (foreground) or in a detached runner
process (``python -m strato.agentruns.runner RUNDIR``, its own session, so it lives on
after the caller exits). The agent gets a session of its own: its group is what a
timeout or a cancel stops."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from strato.agentruns.store import BoundedStream, RunDir
from strato.agents import groups, trust
from strato.agents.config import MAX_KEPT, AgentConfigError, load_config, unwrap
from strato.agents.interpreter import own_python
from strato.agents.lastjson import last_json_object


def launch(run: RunDir, root: Path) -> int:
    """Start the detached runner; its pid."""
    proc = subprocess.Popen(
        own_python("-m", "strato.agentruns.runner", str(run.path), str(root)),
        cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
    )
    run.set_runner(proc.pid)
    return proc.pid


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
    argv = spec.argv_for(req["prompt"])
    env = dict(os.environ)
    if req.get("model"):
        env["VIVARY_AGENT_MODEL"] = req["model"]
    try:
        proc = subprocess.Popen(
            argv, cwd=req["cwd"], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as exc:
        run.finish(_error(req, f"cannot start agent {spec.name}: {exc.strerror or exc}", started))
        return run.result() or {}
    run.set_proc(proc.pid)
    if run.cancel_requested():  # a cancel that came before the pgid was on disk
        groups.stop(proc.pid)
    out, err = bytearray(), bytearray()
    events = [0]
    readers = [
        threading.Thread(target=_copy, args=(proc.stdout, BoundedStream(run.stream), out, run, events)),
        threading.Thread(target=_copy, args=(proc.stderr, BoundedStream(run.stderr), err, None, None)),
    ]
    for r in readers:
        r.start()
    code: int | None
    try:
        code = proc.wait(timeout=spec.timeout_s)
    except subprocess.TimeoutExpired:
        code = None
    groups.stop(proc.pid)  # children it left behind, or the whole group at a timeout
    proc.wait()
    for r in readers:
        r.join()
    run.set_progress(events[0])
    text = bytes(out[-MAX_KEPT:]).decode("utf-8", errors="replace")
    run.finish(_outcome(run, req, code, text, events[0], started, spec.timeout_s))
    return run.result() or {}


def _copy(
    stream: Any, sink: BoundedStream, tail: bytearray, run: RunDir | None, events: list[int] | None
) -> None:
    """Stream to the bounded file and to the in-memory tail (the last MiB, where the
    answer is); count the lines that are JSON objects (a streaming agent's events)."""
    pending = b""
    while chunk := stream.read1(65536):
        sink.write(chunk)
        tail += chunk
        if len(tail) > 2 * MAX_KEPT:
            del tail[: len(tail) - MAX_KEPT]
        if events is not None and run is not None:
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-(1 << 20) :]
            seen = sum(1 for line in lines if _is_event(line))
            if seen:  # at most one small write per chunk read
                events[0] += seen
                run.set_progress(events[0])
    sink.close()
    stream.close()


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
        return found["result"], unwrap(found)[1]
    return stdout.strip(), {}


def main() -> None:
    run, root = RunDir(Path(sys.argv[1])), Path(sys.argv[2])
    try:
        execute(run, root)
    except Exception as exc:  # detached: nobody reads stderr, so the record says it
        run.finish({"status": "error", "reason": f"runner failed: {type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
