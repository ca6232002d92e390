"""The guard tour runs end to end with the real commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.demo_guard import tour
from tests.support.repos import git


def test_tour_shows_refusal_override_and_review(repo_dir: Path) -> None:
    git(repo_dir, "commit", "-q", "--allow-empty", "-m", "init")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    seen: list[str] = []

    def run(argv: list[str]) -> None:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
        seen.append(proc.stdout)

    tour(repo_dir, run)
    text = "".join(seen)
    assert '"status":"refused"' in text and "exit 1" in text
    assert '"authorized_by":"alice@example.com"' in text
    assert "### Guard review passed" in text and "| ` deviation ` | ` deviation ` |" in text
