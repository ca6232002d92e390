"""Run a console script as a real subprocess whose stdout and stderr are a terminal (a
pseudo-terminal): click strips escape sequences only from output that is not a terminal,
so what a person's terminal receives is seen only this way."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.console import BIN


def on_terminal(name: str, *args: str, cwd: Path) -> tuple[int, str]:
    """(exit code, everything written to the terminal) of ``name ARGS`` run in ``cwd``."""
    master, slave = os.openpty()
    try:
        with subprocess.Popen([str(BIN / name), *args], cwd=cwd, stdin=subprocess.DEVNULL,
                              stdout=slave, stderr=slave) as child:
            os.close(slave)
            seen = b""
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed its end
                    break
                if not chunk:
                    break
                seen += chunk
            code = child.wait()
    finally:
        os.close(master)
    return code, seen.decode("utf-8", errors="replace").replace("\r\n", "\n")
