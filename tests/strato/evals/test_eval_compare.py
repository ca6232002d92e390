"""`strato eval compare`: paired per task, the success-rate difference with a seeded
bootstrap interval, cost, flipped tasks, a Markdown report with an SVG plot; runs of
different task sets refused, naming the difference. The runs here are written through
the eval store itself (the runs that make them: test_eval_run.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strato.evals import store
from strato.evals.compare import SetsDiffer, bootstrap, compare
from strato.evals.report import markdown
from tests.support.console import run
from tropo.git.repo import require

TASKS = {f"t{i}": f"digest-{i}" for i in range(6)}


def _config(flow: str, tasks: dict[str, str] = TASKS) -> dict[str, Any]:
    return {"set": {"name": "s", "tasks": tasks}, "flow": {"name": flow, "sha256": flow},
            "agent": "weak", "lanes": True, "repeat": 1, "seed": 0}


def _row(task: str, score: float, tokens: int = 100) -> dict[str, Any]:
    return {"task": task, "trial": 0, "digest": TASKS.get(task, "x"), "score": score,
            "outcome": "success" if score else "failure", "reason": "", "attempts": 1,
            "verifierCalls": 1, "tokens": tokens, "wallMs": 10, "runId": f"{task}-0"}


def _record(root: Path, eval_id: str, config: dict[str, Any], scores: dict[str, float], tokens: int) -> None:
    repo = require(root)
    store.start(repo, eval_id, config)
    for task, score in scores.items():
        store.add(repo, eval_id, _row(task, score, tokens))


def test_compare_pairs_tasks_and_writes_a_report_with_a_plot(repo_dir: Path) -> None:
    _record(repo_dir, "bare", _config("bare"), {t: float(i < 2) for i, t in enumerate(TASKS)}, 100)
    _record(repo_dir, "judged", _config("judged"), {t: float(i != 1) for i, t in enumerate(TASKS)}, 300)
    proc = run("strato", "eval", "compare", "bare", "judged", "--report", "out/report.md", "--json", cwd=repo_dir)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["a"]["successRate"] == pytest.approx(2 / 6) and doc["b"]["successRate"] == pytest.approx(5 / 6)
    assert doc["difference"]["successRate"] == pytest.approx(0.5)
    low, high = doc["difference"]["ci"]
    assert low <= 0.5 <= high and low > -1 and high <= 1
    assert {(f["task"], f["to"]) for f in doc["flipped"]} == {("t1", "fail"), ("t2", "pass"), ("t3", "pass"),
                                                              ("t4", "pass"), ("t5", "pass")}
    assert (doc["a"]["tokensPerTask"], doc["b"]["tokensPerTask"]) == (100, 300)
    report = (repo_dir / "out" / "report.md").read_text()
    assert "![success rate and tokens per task](report.svg)" in report and "| t1 | 1.00 | 0.00 |" in report
    plot = ET.parse(repo_dir / "out" / "report.svg").getroot()
    texts = [t.text for t in plot.iter("{http://www.w3.org/2000/svg}text")]
    assert "33%" in texts and "83%" in texts and "300" in texts
    table = run("strato", "eval", "compare", "bare", "judged", cwd=repo_dir).stdout
    assert "B - A success rate: +50.0%" in table and "flipped: 5" in table


def test_runs_of_different_task_sets_are_refused_naming_the_difference(repo_dir: Path) -> None:
    _record(repo_dir, "a", _config("f"), {"t0": 1.0}, 1)
    other = {**{k: v for k, v in TASKS.items() if k != "t5"}, "t1": "edited", "t9": "new"}
    _record(repo_dir, "b", _config("f", other), {"t0": 1.0}, 1)
    proc = run("strato", "eval", "compare", "a", "b", "--json", cwd=repo_dir)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "different_task_sets"
    [line] = proc.stderr.splitlines()
    assert "only in A: t5" in line and "only in B: t9" in line and "changed: t1" in line


def test_an_unknown_eval_is_refused(repo_dir: Path) -> None:
    proc = run("strato", "eval", "compare", "nope", "nada", "--json", cwd=repo_dir)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "eval_not_found"


@given(st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=1, max_size=40), st.integers(0, 2**32))
def test_the_bootstrap_interval_is_seeded_and_holds_the_mean(diffs: list[float], seed: int) -> None:
    low, high = bootstrap(diffs, seed)
    assert (low, high) == bootstrap(diffs, seed)
    mean = sum(diffs) / len(diffs)
    assert min(diffs) <= low <= high <= max(diffs)
    assert low - 1e-9 <= mean <= high + 1e-9


def test_compare_is_pure_over_what_it_is_given() -> None:
    a = ("a", _config("f"), [_row("t0", 1.0), _row("t1", 0.0)])
    with pytest.raises(SetsDiffer, match="changed: t0"):
        compare(a, ("b", _config("f", {**TASKS, "t0": "other"}), []))


def test_the_report_keeps_what_an_eval_ref_names_as_text() -> None:
    """Whoever pushes an eval ref chooses its task ids, flow and agent names: in the
    Markdown report (a file a person may paste into a pull request) they stay text, never
    a link, an image, HTML or a new table cell."""
    hostile = "t0 | [x](http://evil.example) <img src=x>"
    tasks = {hostile: "d0", "t1": "d1"}
    a = ("a", {**_config("f", tasks), "agent": "a` ![i](http://evil.example/i.png)"},
         [{**_row(hostile, 1.0), "digest": "d0"}, {**_row("t1", 0.0), "digest": "d1"}])
    b = ("b", _config("f", tasks), [{**_row(hostile, 0.0), "digest": "d0"}, {**_row("t1", 0.0), "digest": "d1"}])
    text = markdown(compare(a, b, 0), "plot.svg")
    lines = text.splitlines()
    flipped = next(line for line in lines if "evil" in line and line.startswith("|"))
    assert flipped.count(" | ") == 2  # three cells: the task stays one
    assert all(flipped[i - 1] == "\\" for i, c in enumerate(flipped) if c in "<[(")  # each escaped
    agent = next(line for line in lines if line.startswith("- A: "))
    assert agent.startswith("- A: `` ") and agent.endswith(" ``")  # one code span: its link is text
