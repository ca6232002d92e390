"""Serve one of the oracle's console scripts from one interpreter: run by the oracle's
Python as `python oracle_server.py SCRIPT`, it answers each request line
`{"argv", "cwd", "env"}` (the whole environment) with `{"code", "stdout", "stderr"}` (the bytes in base64),
each run as the script would run as a fresh process with stdin on /dev/null.

Standalone on purpose (no import from the tests): it runs in the oracle's venv."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any


def _entry(script: str) -> Callable[[], Any]:
    """The callable a pip console script runs: its `from MODULE import NAME` line."""
    with open(script, encoding="utf-8") as handle:
        found = re.search(r"^from (\S+) import (\S+)$", handle.read(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"oracle_server: {script} is not a console script")
    module = __import__(found.group(1), fromlist=[found.group(2)])
    entry: Callable[[], Any] = getattr(module, found.group(2))
    return entry


def _exit_code(code: object) -> int:
    """What `sys.exit(code)` leaves as the process's status (a message goes to stderr)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _one(entry: Callable[[], Any], script: str, request: dict[str, Any]) -> dict[str, Any]:
    saved_env = dict(os.environ)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    out, err = io.BytesIO(), io.BytesIO()
    encoding, errors = sys.__stdout__.encoding, sys.__stdout__.errors  # a pipe's, as the script's own
    stdout = sys.stdout = io.TextIOWrapper(out, encoding=encoding, errors=errors, write_through=True)
    stderr = sys.stderr = io.TextIOWrapper(err, encoding=encoding, errors="backslashreplace",
                                           write_through=True)
    sys.stdin = open(os.devnull, encoding=encoding)  # noqa: SIM115 (closed below)
    sys.argv = [script, *request["argv"]]
    try:
        try:
            code = _exit_code(entry())
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:  # what an uncaught exception does to a process
            traceback.print_exc()
            code = 1
    finally:
        sys.stdin.close()
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__
        for stream in (stdout, stderr):
            stream.flush()
            stream.detach()  # the bytes stay readable
        os.environ.clear()
        os.environ.update(saved_env)
    return {"code": code, "stdout": base64.b64encode(out.getvalue()).decode(),
            "stderr": base64.b64encode(err.getvalue()).decode()}


def main() -> None:
    script = sys.argv[1]
    sys.path[0] = os.path.dirname(script)  # as when the script itself runs
    requests = os.fdopen(os.dup(0), encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    with open(os.devnull, "rb") as null_in, open(os.devnull, "wb") as null_out:
        os.dup2(null_in.fileno(), 0)  # what the oracle (and what it starts) reads: nothing
        os.dup2(null_out.fileno(), 1)  # a stray write to fd 1 cannot break the protocol
    entry = _entry(script)
    for line in requests:
        answers.write(json.dumps(_one(entry, script, json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
