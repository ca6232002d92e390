"""The heartbeat's part of `make demo`, on its own: it must show a proposal applied."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import demo_heartbeat
from tests.support.repos import git


def test_demo_tour_applies_a_playbook_row(ws: Path, capfd: pytest.CaptureFixture[str]) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    def run(argv: list[str]) -> None:
        print(f"$ {' '.join(argv)}", flush=True)
        subprocess.run(argv, cwd=ws, env=env, check=True)

    demo_heartbeat.tour(ws, run)
    out = capfd.readouterr().out
    assert "parser: a class of bug fixed 2 times" in out and "applied playbook-" in out
    assert "bug-risk-playbook.md | " in out
    assert git(ws, "status", "--porcelain") == ""
