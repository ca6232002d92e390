"""The pre-commit framework manifest runs the same strict staged check."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import yaml

from tests.support.cli import CHANGE, break_ref
from tests.support.console import BIN
from tests.support.workspaces import scaffold

MANIFEST = Path(__file__).parents[2] / ".pre-commit-hooks.yaml"


def test_manifest_entry_checks_the_staged_snapshot(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load(MANIFEST.read_text())
    assert hook["id"] == "tropo-check" and hook["pass_filenames"] is False
    argv = shlex.split(hook["entry"])
    argv[0] = str(BIN / argv[0])
    root = tmp_path / "ws"
    scaffold(root, "--yes")
    assert subprocess.run(argv, cwd=root, capture_output=True).returncode == 0
    break_ref(root)
    assert subprocess.run(argv, cwd=root, capture_output=True).returncode == 0  # not staged
    subprocess.run(["git", "add", CHANGE], cwd=root, check=True)
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True)
    assert proc.returncode == 1 and "no-such-module" in proc.stdout + proc.stderr
