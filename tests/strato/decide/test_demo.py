"""The demo tour runs one governed decision end to end on a real tropo workspace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.demo_decide import tour
from tests.support.repos import git, write_files
from tropo.governed.capsule import is_intact

FILES = {
    "tropo.toml": """\
[base]
derive = ["id", "title"]
[types.module]
folder = "modules"
optional = { related_changes = "ref-list" }
[types.change]
folder = "changes"
optional = { related_modules = "ref-list", verification = "ref-list" }
[types.verification]
folder = "verification"
""",
    "modules/graph/index.md": "# Graph\n",
    "modules/hooks/index.md": "---\nrelated_changes: [add-hooks]\n---\n# Hooks\n",
    "changes/add-hooks.md": "---\nrelated_modules: [hooks, graph]\nverification: [hooks-smoke]\n---\n# Add hooks\n",
    "verification/hooks-smoke.md": "# Hooks smoke test\n",
}


def test_tour_acts_then_stops(tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    write_files(ws, FILES)
    git(ws, "init", "-q")
    outputs: list[tuple[int, str]] = []

    def run(argv: list[str]) -> None:
        exe = Path(sys.executable).parent / argv[0]
        proc = subprocess.run([str(exe), *argv[1:]], cwd=ws, capture_output=True, text=True, check=False)
        outputs.append((proc.returncode, proc.stdout))

    tour(ws, run)
    assert outputs[0] == (0, "strato decide: act\n")
    assert outputs[1][0] == 0 and "claims verified" in outputs[1][1]
    final = json.loads(outputs[2][1])
    assert (final["decision"], final["reason_codes"]) == ("stop", ["all_checks_clear"])
    capsule = json.loads((tmp_path / "decide" / "capsule.json").read_text())
    assert is_intact(capsule)
    assert {c["subject"] for c in capsule["claims"]} == {"graph", "hooks", "add-hooks", "hooks-smoke"}
