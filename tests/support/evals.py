"""Eval workspaces: the shipped demo task set (or a few of its tasks), its weak agent,
its test-running judge and the `unittest` scorer, configured in the test's own
`$XDG_CONFIG_HOME/vivary/` as a user configures them (docs/evals.md)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from strato.agents import trust
from strato.evals import store
from tests.support.layout import ROOT
from tropo.git.repo import require

DEMO = ROOT / "strato" / "evals" / "data" / "demo"
FLOWS = DEMO / "flows"


def configure(rate: float = 0.4, feedback_rate: float = 0.1, extra: str = "", agent_name: str = "weak") -> None:
    """The user's own agents.toml (`weak` unless named otherwise, the judge) and evals.toml
    (`unittest`)."""
    home = trust.config_dir()
    home.mkdir(parents=True, exist_ok=True)
    py, agent = json.dumps(sys.executable), DEMO / "agent"
    (home / "agents.toml").write_text(
        f'[agents.{agent_name}]\nargv = [{py}, "{agent / "demo_weak_agent.py"}", "--rate", "{rate}", '
        f'"--feedback-rate", "{feedback_rate}", "{{prompt}}"]\ntimeout_s = 60\n\n'
        f'[judge]\nargv = [{py}, "{agent / "demo_test_judge.py"}", "{{prompt}}"]\ntimeout_s = 60\n{extra}'
    )
    (home / "evals.toml").write_text(
        f'[scorers.unittest]\nargv = [{py}, "-m", "unittest", "discover", "-s", "tests"]\ntimeout_s = 60\n'
    )


def tiny_set(dest: Path, ids: tuple[str, ...] = ("s01", "n01", "l01")) -> Path:
    """A task set of a few of the demo's tasks (their fixture and overlays)."""
    shutil.copytree(DEMO / "fixture", dest / "fixture")
    (dest / "tasks").mkdir()
    for task in ids:
        shutil.copytree(DEMO / "overlays" / task, dest / "overlays" / task)
        shutil.copy(DEMO / "tasks" / f"{task}.md", dest / "tasks" / f"{task}.md")
    shutil.copy(DEMO / "tropo.toml", dest / "tropo.toml")
    return dest


def record_eval(root: Path, eval_id: str, flow: str, scores: dict[str, float], *, tokens: int = 100,
                set_name: str = "s", run_ids: bool = True) -> None:
    """An eval written through the eval store itself (as `strato eval run` writes one):
    one result per task, each task's digest its name."""
    repo = require(root)
    config = {"set": {"name": set_name, "tasks": {t: f"digest-{t}" for t in scores}},
              "flow": {"name": flow, "sha256": flow}, "agent": "weak", "lanes": True, "repeat": 1, "seed": 0}
    store.start(repo, eval_id, config)
    for task, score in scores.items():
        store.add(repo, eval_id, {
            "task": task, "trial": 0, "digest": f"digest-{task}", "score": score,
            "outcome": "success" if score else "failure", "reason": f"{task} reason", "attempts": 1,
            "verifierCalls": 1, "tokens": tokens, "wallMs": 10, "runId": f"{task}-0-abc123" if run_ids else None})
