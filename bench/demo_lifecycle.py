"""Tour of the workspace lifecycle: init with a first commit, a refused commit, a fix.

``run`` executes one argv and shows it with its output; a refused commit exits non-zero
on purpose, so that step reports the exit code itself instead of failing the tour.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
CHANGE = "changes/local-ci-baseline.md"


def tour(tmp: Path, run: Callable[[list[str]], None]) -> Path:
    ws = tmp / "lifecycle-demo"
    run([str(BIN / "create-vivary"), "init", str(ws), "--preset", "coding", "--commit", "--yes"])
    run(["git", "-C", str(ws), "log", "--oneline"])
    for key, value in (("user.name", "Demo"), ("user.email", "demo@example.invalid")):
        run(["git", "-C", str(ws), "config", key, value])  # later commits need an author
    change = ws / CHANGE
    good = change.read_text()
    change.write_text(good.replace("[codebase, agent-workspace]", "[codebase, no-such-module]"))
    run(["git", "-C", str(ws), "add", CHANGE])
    run(["sh", "-c", f"git -C '{ws}' commit -q -m 'broken ref' 2>&1; echo \"exit $?\""])
    change.write_text(good.replace("[codebase, agent-workspace]", "[codebase]"))
    run(["git", "-C", str(ws), "commit", "-q", "-a", "-m", "Link the starter change to codebase"])
    run(["git", "-C", str(ws), "log", "--oneline"])
    return ws


def _show(argv: list[str]) -> None:
    print("$", " ".join(argv), flush=True)
    subprocess.run(argv, check=False)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        tour(Path(tmp), _show)
