"""`make demo` must keep working: run the whole tour as a process and read what it shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_make_demo_tour_runs_end_to_end() -> None:
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "bench.demo"], cwd=root, capture_output=True, text=True,
                          check=False, timeout=600)
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
    assert out.rstrip().splitlines()[-2].strip() == "vivary serve --demo --open"  # ends with the workbench
    assert out.rstrip().endswith("vivary serve --open --root PATH")
