"""Record the workbench demo's sample evals (``workbench/demo/sample-evals.json``) from
real eval runs.

In a temporary repository with a configuration of its own, runs six of the shipped demo
set's tasks (docs/evals.md) through the `bare` and `judged` flows with the weak demo
agent (lanes off), then asks the workbench's own repository views what they show: the
list, each eval, their comparison and every result's run. ``vivary serve --demo`` shows
them as recorded.

    python -m bench.workbench_demo_evals      # rewrite the fixture
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from workbench.repo import RepoSource

FIXTURE = Path(__file__).resolve().parent.parent / "workbench" / "demo" / "sample-evals.json"
DEMO = Path(__file__).resolve().parent.parent / "strato" / "evals" / "data" / "demo"
TASKS = ("s01", "s02", "n01", "n02", "l01", "l02")
FLOWS = ("bare", "judged")


def _task_set(dest: Path) -> Path:
    shutil.copytree(DEMO / "fixture", dest / "fixture")
    (dest / "tasks").mkdir()
    for task in TASKS:
        shutil.copytree(DEMO / "overlays" / task, dest / "overlays" / task)
        shutil.copy(DEMO / "tasks" / f"{task}.md", dest / "tasks" / f"{task}.md")
    return dest


def _configure(home: Path) -> None:
    (home / "vivary").mkdir(parents=True)
    py, agent = json.dumps(sys.executable), DEMO / "agent"
    (home / "vivary" / "agents.toml").write_text(
        f'[agents.weak]\nargv = [{py}, "{agent / "demo_weak_agent.py"}", "{{prompt}}"]\ntimeout_s = 60\n\n'
        f'[judge]\nargv = [{py}, "{agent / "demo_test_judge.py"}", "{{prompt}}"]\ntimeout_s = 60\n')
    (home / "vivary" / "evals.toml").write_text(
        f'[scorers.unittest]\nargv = [{py}, "-m", "unittest", "discover", "-s", "tests"]\ntimeout_s = 60\n')


def record(tmp: Path) -> dict[str, Any]:
    ws = tmp / "ws"
    ws.mkdir()
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")  # the runs' spec names `weak`: read with it known
    env = dict(os.environ)
    _configure(tmp / "config")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    task_set = _task_set(tmp / "demo-tasks")
    strato = Path(sys.executable).parent / "strato"
    for flow in FLOWS:
        spec = DEMO / "flows" / f"{flow}.stratum.yaml"
        subprocess.run([str(strato), "eval", "run", str(task_set), "--flow", str(spec),
                        "--agent", "weak", "--lanes", "off", "--id", flow], cwd=ws, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    source = RepoSource(ws)
    evals = {e: source.eval(e) for e in FLOWS}
    runs = {f"{e}/{r['runId']}": source.eval_run(e, r["runId"], 0, 500)
            for e, doc in evals.items() for r in doc["rows"]}
    return {"list": source.evals(), "evals": evals, "compare": {"bare/judged": source.compare_evals(*FLOWS)},
            "runs": runs, "root": str(ws)}


def _relative(data: Any, root: str) -> Any:
    """The temporary folder's path out of the recording: paths as a workspace shows them."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False).replace(root + "/", "")
    return json.loads(text)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = record(Path(tmp))
    root = data.pop("root")
    FIXTURE.write_text(json.dumps(_relative(data, root), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                       encoding="utf-8")
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    main()
