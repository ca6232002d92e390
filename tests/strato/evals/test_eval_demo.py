"""The shipped demo (docs/evals.md): its task set is a valid workspace of `task` nodes,
and, run end to end, retries with the judge's feedback beat the agent's first try."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strato.evals.tasks import load_set
from tests.support.console import run
from tests.support.evals import DEMO, FLOWS, configure


def test_the_demo_set_is_a_checked_workspace_of_20_to_40_task_nodes() -> None:
    tasks = load_set(DEMO)
    assert 20 <= len(tasks) <= 40 and not [t.id for t in tasks if t.problem]
    proc = run("tropo", "check", "--json", cwd=DEMO)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.slow
def test_the_demo_end_to_end_judged_retries_beat_the_first_try(repo_dir: Path) -> None:
    configure()
    for flow in ("bare", "judged"):
        proc = run("strato", "eval", "run", DEMO, "--flow", FLOWS / f"{flow}.stratum.yaml", "--agent", "weak",
                   "--lanes", "off", "--id", flow, "--json", cwd=repo_dir)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["results"] == len(load_set(DEMO))
    proc = run("strato", "eval", "compare", "bare", "judged", "--report", "report.md", "--json", cwd=repo_dir)
    doc = json.loads(proc.stdout)
    assert doc["b"]["successRate"] > doc["a"]["successRate"] and doc["difference"]["ci"][0] > 0, doc
    assert doc["b"]["verifierCallsPerTask"] >= 1 > doc["a"]["verifierCallsPerTask"]
    assert all(f["to"] == "pass" for f in doc["flipped"])
    assert (repo_dir / "report.svg").read_text().startswith("<svg")
