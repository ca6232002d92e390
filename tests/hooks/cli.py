"""Run our console scripts as real subprocesses, the way a user or an agent would,
and break a fresh workspace's graph in a known place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
CHANGE = "changes/local-ci-baseline.md"  # the coding preset's starter change


def run_cli(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *args], cwd=cwd, capture_output=True, text=True, check=False)


def run_json(name: str, *args: str, cwd: Path | None = None) -> tuple[int, Any]:
    proc = run_cli(name, *args, "--json", cwd=cwd)
    return proc.returncode, json.loads(proc.stdout)


def break_ref(root: Path) -> None:
    """Point the starter change at a module that does not exist (line 5)."""
    path = root / CHANGE
    text = path.read_text()
    assert "related_modules: [codebase, agent-workspace]" in text
    path.write_text(text.replace("[codebase, agent-workspace]", "[codebase, no-such-module]"))
