"""`strato run` and `strato flow show` on the scaffold's own example, as a newcomer meets
them: the gate shows what it asks about, a check with findings fails, a missing spec is
one clean line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import console
from tests.support.workspaces import scaffold

BIN = Path(sys.executable).parent
EXAMPLE = "examples/review.stratum.yaml"


def _run(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}  # the step runs `tropo`
    return console.run("strato", *args, cwd=ws, env=env)  # a traceback raises


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return scaffold(tmp_path / "ws")


def test_the_example_gate_shows_the_check_it_asks_about(ws: Path) -> None:
    assert _run(ws, "run", EXAMPLE, "--input", "topic=docs", "--id", "review-1").returncode == 0
    shown = _run(ws, "flow", "show", "review-1")
    assert '         asks about check: {"checked": ' in shown.stdout and '"errors": 0' in shown.stdout
    (gate,) = json.loads(_run(ws, "flow", "show", "review-1", "--json").stdout)["gates"]
    assert gate["stepId"] == "review" and gate["subject"]["check"]["findings"] == []


def test_the_example_fails_its_check_step_on_findings(ws: Path) -> None:
    (ws / "changes" / "broken.md").write_text("---\nstatus: active\n---\n# Broken\n")
    proc = _run(ws, "run", EXAMPLE, "--input", "topic=docs", "--id", "review-2", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["status"] == "failed" and doc["gates"] == []
    assert doc["failure"]["reason"].startswith("evaluate: exited 1: tropo: ") and "error(s)" in doc["failure"]["reason"]


def test_a_missing_spec_is_one_line_without_errno(ws: Path) -> None:
    proc = _run(ws, "run", "nonexistent.yaml")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "error: cannot read spec nonexistent.yaml: no such file or directory\n"
