"""The lifecycle tour really refuses the broken commit and lands the fixed one."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.demo_lifecycle import tour
from tests.support.repos import git


def test_tour(tmp_path: Path) -> None:
    outputs: list[str] = []

    def run(argv: list[str]) -> None:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        outputs.append(proc.stdout + proc.stderr)

    ws = tour(tmp_path, run)
    text = "".join(outputs)
    assert "changes/local-ci-baseline.md:5:" in text and "exit 1" in text
    subjects = git(ws, "log", "--format=%s").splitlines()
    assert subjects == [
        "Link the starter change to codebase",
        "Vivary workspace (coding preset, create-vivary)",
    ]
    assert git(ws, "status", "--porcelain") == ""
