"""The README's quick tour as lines a shell runs: read from the README's ```sh block,
run one by one in one shell session's worth of state, and what the tour leaves behind.
tests/test_readme_tour.py runs it from this checkout, tests/test_wheel.py from a wheel."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.layout import ROOT

BIN = Path(sys.executable).parent


def block_lines(text: str, heading: str) -> list[str]:
    """The commands of the first ```sh block after `heading`."""
    section = text.split(heading, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, f"no ```sh block after {heading!r}"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def tour_lines() -> list[str]:
    """The README's quick tour, line by line."""
    return block_lines((ROOT / "README.md").read_text(encoding="utf-8"), "## Quick tour")


def run_lines(tmp_path: Path, lines: list[str], bin_dir: Path = BIN) -> Path:
    """Run each line in one shell session's worth of state (the folder a `cd` left), with
    the commands of ``bin_dir`` first on PATH."""
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    cwd_file = tmp_path / ".cwd"
    cwd = tmp_path / "tour"
    cwd.mkdir()
    for line in lines:
        script = f"set -o pipefail\n{line}\nstatus=$?\npwd > {cwd_file}\nexit $status\n"
        proc = subprocess.run(
            ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        assert proc.returncode == 0, f"{line!r} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        cwd = Path(cwd_file.read_text().strip())
    return cwd


SCAFFOLD = ["create-vivary init my-ws --preset coding --commit", "cd my-ws"]


def assert_the_tour_ran(tmp_path: Path) -> None:
    """What the tour leaves behind: its page, its request and its flow run's ref."""
    ws = tmp_path / "tour" / "my-ws"
    assert (ws / "graph.html").is_file() and (ws / "request.json").is_file()
    assert "refs/vivary/runs/review-1/head" in subprocess.run(
        ["git", "-C", str(ws), "for-each-ref", "--format=%(refname)"], capture_output=True, text=True, check=True
    ).stdout
