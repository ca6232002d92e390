"""`make demo` must keep working: run the whole tour as a process and read what it shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def fresh_shell() -> dict[str, str]:
    """A new terminal after `make demo`: the venv's bin is not on PATH."""
    return {**os.environ, "PATH": os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                                                  if d and Path(d).resolve() != BIN.resolve())}


def test_make_demo_tour_runs_end_to_end(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "bench.demo"], cwd=root, capture_output=True, text=True,
                          check=False, env=fresh_shell())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out, err = proc.stdout, proc.stderr
    assert "commit refused" in out + err
    assert "tropo: 9 document(s), 0 error(s), 0 warning(s)" in out
    assert "strato decide: " in out  # act, or request_gate while the scaffold has an open gate
    assert "is already claimed by @connie" in err  # a refusal: one line on stderr
    assert "Guard review passed" in out
    # one background run, polled to its gate with no process left running
    assert "strato run flows/note.yaml --input 'topic=background runs' --id demo-bg --background" in out
    assert '"gateStepId": "review", "pendingGates": ["review"], "status": "waiting_gate"' in out
    assert "== demo done" in out
    # ends with the workbench, in commands a fresh shell in this folder runs as printed (issue 26:
    # a bare `vivary` failed there, with nothing saying to put .venv/bin on PATH)
    tail = out.rstrip().splitlines()[-4:]
    assert tail[0] == "See it in the workbench (a recorded run of this tour, no repository needed):"
    vivary = tail[1].strip().removesuffix(" serve --demo --open")
    assert tail[1] == f"  {vivary} serve --demo --open"
    assert tail[2] == f"or on a workspace of your own: {vivary} serve --open --root PATH"
    assert tail[3] == f'To type `vivary` alone, put its folder on PATH: export PATH="{BIN}:$PATH"'
    printed = subprocess.run(["bash", "-c", f"{vivary} serve --export-demo {tmp_path / 'site'}"], cwd=root,
                             env=fresh_shell(), capture_output=True, text=True, check=False)
    assert printed.returncode == 0 and (tmp_path / "site" / "index.html").is_file(), printed.stderr
