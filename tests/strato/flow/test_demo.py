"""The demo tour runs the real CLI: the valid plan passes, the unbounded one is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.demo_flowspec import tour


def test_tour(tmp_path: Path) -> None:
    codes: list[tuple[list[str], int]] = []

    def run(argv: list[str]) -> None:
        exe = str(Path(sys.executable).with_name(argv[0]))
        proc = subprocess.run([exe, *argv[1:]], cwd=tmp_path, capture_output=True, check=False)
        codes.append((argv, proc.returncode))

    tour(tmp_path, run)
    assert [code for _, code in codes] == [0, 1]
    assert (tmp_path / "flows" / "write.stratum.yaml").is_file()
