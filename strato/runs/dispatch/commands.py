"""`evaluate` steps: a command from the spec run once in the workspace root, given the
rendered `in` value as JSON on stdin; its output is the last JSON object it prints (as
for agents). A non-zero exit, a timeout or no JSON is a failure, and final: the engine
does not retry a deterministic command. A command runs only while its spec is approved
here (:mod:`strato.agents.spectrust`), checked again at each run: a run ref fetched from
another clone, or one an MCP client started, fails the step with the refusal instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from strato.agents.lastjson import last_json_object
from strato.agents.process import last_line, run_process
from strato.agents.spectrust import command_refusal
from strato.runs.engine.context import Evaluation, Evaluator

DEFAULT_TIMEOUT_MS = 60_000


def command_evaluator(root: Path, spec_text: str) -> Evaluator:
    """The evaluator of the run whose frozen spec is ``spec_text``."""

    def run(command: str, value: Any, timeout_ms: int | None) -> Evaluation:
        refusal = command_refusal(root, spec_text, command)
        if refusal is not None:
            return Evaluation(None, f"evaluate: {refusal}", 0)
        timeout = (timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
        stdin = json.dumps(value).encode()
        done = run_process(["sh", "-c", command], root, timeout, stdin)
        if isinstance(done, str):
            return Evaluation(None, f"evaluate: cannot start sh: {done}", 0)
        ms = done.duration_ms
        if done.returncode is None:
            return Evaluation(None, f"evaluate: timed out after {timeout:g}s", ms)
        if done.returncode != 0:
            tail = last_line(done.stderr_tail or done.stdout)
            return Evaluation(None, f"evaluate: exited {done.returncode}: {tail}".rstrip(": "), ms)
        found = last_json_object(done.stdout)
        if found is None:
            return Evaluation(None, "evaluate: printed no JSON object", ms)
        return Evaluation(found, None, ms)

    return run
