"""The heartbeat part of `make demo`: two fixes of one class, one heartbeat, one proposal
applied on its own branch."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from strato.proposals import store


def tour(ws: Path, run: Callable[[list[str]], None]) -> None:
    """Commit two fixes of the same class of bug, run a heartbeat, show the playbook row
    it proposes and apply it on `heartbeat/<id>`: the checkout stays as it was."""
    print("\n== the heartbeat: a class of bug fixed twice proposes a playbook row")
    (ws / "src").mkdir(exist_ok=True)
    for n, message in enumerate(("fix(parser): empty input crashed", "fix(parser): a lone quote crashed")):
        (ws / "src" / "parser.py").write_text(f"VERSION = {n}\n")
        if n:
            (ws / "tests").mkdir(exist_ok=True)
            (ws / "tests" / "test_parser.py").write_text("def test_quote() -> None: ...\n")
        subprocess.run(["git", "add", "src", "tests"] if n else ["git", "add", "src"], cwd=ws, check=True)
        run(["git", "commit", "-q", "-m", message])
    run(["strato", "heartbeat", "run"])
    run(["strato", "heartbeat", "status"])
    rows = [r for r in store.all_records(store.sidecar(ws)) if r["check"] == "playbook"]
    if not rows:
        raise SystemExit("demo: the heartbeat proposed no playbook row")
    pid = str(rows[0]["id"])
    run(["strato", "heartbeat", "show", pid])
    run(["strato", "heartbeat", "apply", pid])
    run(["git", "log", "--oneline", "-1", f"heartbeat/{pid}"])
    run(["git", "diff", "--stat", "HEAD", f"heartbeat/{pid}"])
    run(["git", "status", "--short"])
