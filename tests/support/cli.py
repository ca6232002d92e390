"""Our console scripts answered as a user or an agent sees them (exit code, stdout,
stderr, the --json document), run in this process; and a fresh workspace's graph broken
in a known place."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.console import run

CHANGE = "changes/local-ci-baseline.md"  # the coding preset's starter change


def run_cli(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`name ARGS...` in process (tests.support.console.run); `run_process` where the
    process boundary is what a test proves."""
    return run(name, *args, cwd=cwd)


def run_json(name: str, *args: str, cwd: Path | None = None) -> tuple[int, Any]:
    """(exit code, the parsed --json document) of `name ARGS... --json`."""
    proc = run_cli(name, *args, "--json", cwd=cwd)
    return proc.returncode, json.loads(proc.stdout)


def break_ref(root: Path) -> None:
    """Point the starter change at a module that does not exist (line 5)."""
    path = root / CHANGE
    text = path.read_text()
    assert "related_modules: [codebase, agent-workspace]" in text
    path.write_text(text.replace("[codebase, agent-workspace]", "[codebase, no-such-module]"))
