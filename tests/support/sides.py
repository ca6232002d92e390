"""The two sides of a parity test, answered as `subprocess.run(text=True)` would answer:
ours by console-script name, run in this process (tests/support/console.py); the oracle's
by the path of its console script, served from one oracle interpreter per script that
stays up for the test process (tests/support/oracle_server.py), so a call costs no
interpreter start.

The parity is of files, exit codes and output, not of processes: a test whose claim is
about the oracle's process (a crash, a signal) starts it itself."""

from __future__ import annotations

import atexit
import base64
import json
import locale
import os
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

from tests.support.console import run

SERVER = Path(__file__).with_name("oracle_server.py")


class _Served:
    """One oracle console script behind a long-lived interpreter of the oracle's venv."""

    def __init__(self, script: Path) -> None:
        self.script = script
        self.lock = threading.Lock()  # parity sides may run in threads (tropo_parity)
        self.proc = subprocess.Popen([str(script.parent / "python"), str(SERVER), str(script)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        atexit.register(self.close)

    def call(self, argv: list[str], cwd: Path, env: Mapping[str, str] | None) -> subprocess.CompletedProcess[str]:
        environ = {**os.environ, **(env or {})}  # this process's, as a child started now would get
        request = json.dumps({"argv": argv, "cwd": str(cwd), "env": environ})
        with self.lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the oracle's server for {self.script} died (exit {self.proc.wait()})")
        answer = json.loads(line)
        return subprocess.CompletedProcess([str(self.script), *argv], answer["code"],
                                           _text(answer["stdout"]), _text(answer["stderr"]))

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait()


def _text(encoded: str) -> str:
    """Bytes decoded as `subprocess.run(text=True)` decodes them (universal newlines)."""
    data = base64.b64decode(encoded).decode(locale.getpreferredencoding(False))
    return data.replace("\r\n", "\n").replace("\r", "\n")


_SERVED: dict[Path, _Served] = {}
_STARTING = threading.Lock()


def served(script: Path, argv: list[str], cwd: Path,
           env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The oracle's console script `script` run with `argv` in `cwd` (stdin empty, this
    process's environment plus `env`), served by its long-lived interpreter."""
    with _STARTING:
        if script not in _SERVED:
            _SERVED[script] = _Served(script)
    return _SERVED[script].call([str(a) for a in argv], cwd, env)


def run_side(exe: Path | str, argv: list[str], cwd: Path,
             env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One side of a parity test: ours by console-script name (in process), the oracle's
    by its script's path (served)."""
    if isinstance(exe, str):
        return run(exe, *argv, cwd=cwd, env=env)
    return served(exe, argv, cwd, env)
