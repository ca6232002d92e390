from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.demo_exo import tour
from tests.support.coordination import write_workspace
from tests.support.repos import commit_all, git

BIN = Path(sys.executable).parent


def test_tour_claims_shows_the_holder_and_releases(repo_dir: Path) -> None:
    write_workspace(repo_dir)
    commit_all(repo_dir)
    seen: list[tuple[list[str], int, str]] = []

    def run(argv: list[str]) -> None:
        exe = str(BIN / argv[0]) if argv[0] == "exo" else argv[0]
        proc = subprocess.run([exe, *argv[1:]], cwd=repo_dir, capture_output=True, text=True,
                              check=False)
        seen.append((argv, proc.returncode, proc.stdout + proc.stderr))

    tour(repo_dir, run)
    codes = {" ".join(argv[:2] + argv[4:5]): code for argv, code, _ in seen}
    assert codes["exo claim @connie"] == 0 and codes["exo claim @dave"] == 1
    board = next(out for argv, _, out in seen if argv[:2] == ["exo", "board"])
    assert "@connie" in board
    assert seen[-1][1] == 0 and git(repo_dir, "for-each-ref", "refs/heads/claim") == ""
