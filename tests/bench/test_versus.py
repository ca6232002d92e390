"""bench.versus against itself: every selected row is timed on both sides and compared."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_against_itself_prints_each_row_with_a_ratio() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.versus", "--base", str(ROOT), "--repeat", "1", "--nodes", "50",
         "--only", "start-up"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("load average at the start: ") and lines[-1].startswith("load average at the end: ")
    rows = [line for line in lines[2:-1] if line.strip()]
    assert [r.split("  ")[0] for r in rows] == ["strato --help (start-up)", "vivary --help (start-up)"]
    number = r" +\d+\.\d{3}"
    assert all(re.search(f"{number}{number} +\\d+\\.\\d\\dx{number}{number} +\\d+\\.\\d\\dx$", r)
               for r in rows), rows


def test_a_base_without_a_virtualenv_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.versus", "--base", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and ".venv/bin/python is missing" in proc.stderr
