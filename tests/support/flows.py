"""A workspace for engine tests: a real git repository with one commit and
`.vivary/agents.toml` pointing `claude`, `codex` and the judge at a scripted stand-in
agent (a real subprocess) that answers from a plan file."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strato.runs.service import Runs
from tests.support import console
from tests.support.approvals import approve_agents
from tests.support.repos import commit_all, git, write_files
from tests.support.workspaces import copy_of

HERE = Path(__file__).parents[1] / "strato" / "flow"
AGENT = HERE / "agent_scripts" / "scripted.py"
FIXTURES = HERE / "fixtures"
STRATO = Path(sys.executable).parent / "strato"


@dataclass
class Workspace:
    root: Path
    plan_file: Path

    def agents(self, rules: list[dict[str, Any]], *, judge: bool = False, extra: str = "") -> None:
        """Script the agents: each rule is {"match": text, "replies": [reply, ...]}."""
        self.plan_file.write_text(json.dumps(rules))
        for suffix in (".counts", ".log"):
            Path(f"{self.plan_file}{suffix}").unlink(missing_ok=True)
        argv = json.dumps([sys.executable, str(AGENT), str(self.plan_file), "{prompt}"])
        text = "".join(f"[agents.{name}]\nargv = {argv}\ntimeout_s = 60\n{extra}\n" for name in ("claude", "codex"))
        if judge:
            text += f"[judge]\nargv = {argv}\n"
        (self.root / ".vivary").mkdir(exist_ok=True)
        (self.root / ".vivary" / "agents.toml").write_text(text)
        approve_agents(self.root)

    def prompts(self) -> list[str]:
        log = Path(f"{self.plan_file}.log")
        if not log.exists():
            return []
        return [json.loads(line)["prompt"] for line in log.read_text().splitlines()]

    def runs(self) -> Runs:
        return Runs(self.root)

    def spec(self, name: str) -> str:
        return (FIXTURES / name).read_text()

    def strato(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        """`strato ARGS --root ROOT`, in process (the CLI, not the process, is under test)."""
        proc = console.run("strato", *args, "--root", self.root)
        if check and proc.returncode != 0:
            raise AssertionError(f"strato {args} exited {proc.returncode}: {proc.stderr}")
        return proc

    def strato_json(self, *args: str) -> tuple[int, dict[str, Any]]:
        proc = self.strato(*args, "--json")
        return proc.returncode, json.loads(proc.stdout)


def make_workspace(tmp_path: Path, files: dict[str, str] | None = None) -> Workspace:
    """`tmp_path/ws`: a repository whose one commit holds a README and ``files``, built once
    per process for each set of files and copied (the same commit every time)."""
    contents = {"README.md": "# ws\n", **(files or {})}
    digest = hashlib.sha256(json.dumps(contents, sort_keys=True).encode()).hexdigest()[:16]
    root = copy_of(f"flows-ws-{digest}", tmp_path / "ws", lambda where: _initial(where, contents))
    return Workspace(root, tmp_path / "agent-plan.json")


def _initial(root: Path, files: dict[str, str]) -> None:
    root.mkdir()
    git(root, "init", "-q")
    write_files(root, files)
    commit_all(root, "initial")


def reply(obj: Any) -> dict[str, Any]:
    return {"json": obj}


def event_types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


DISPATCH_SPEC = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${b.output}", contract: R}
    budget: {usd: 1.0}
    steps:
      - id: a
        do: "step a"
        out: R
        ensure:
          - expr: "result.n > 0"
        attempts: 3
      - id: b
        after: [a]
        do: "step b after ${a.output.n}"
        out: R
"""


def planned(tmp_path: Path, spec: str = DISPATCH_SPEC, inputs: dict[str, Any] | None = None) -> tuple[Workspace, Runs]:
    ws = make_workspace(tmp_path)
    runs = ws.runs()
    runs.plan(spec, inputs or {}, "r1")
    return ws, runs


def ready_entry(runs: Runs, step: str = "a") -> dict[str, Any]:
    return next(e for e in runs.engine(runs.load("r1")).ready() if e["id"] == step)
