"""Run our console scripts as real subprocesses, the way a user or an agent would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent


def run_cli(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *args], cwd=cwd, capture_output=True, text=True, check=False)


def run_json(name: str, *args: str, cwd: Path | None = None) -> tuple[int, Any]:
    proc = run_cli(name, *args, "--json", cwd=cwd)
    return proc.returncode, json.loads(proc.stdout)
