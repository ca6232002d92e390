"""How a finished task is scored: by the run's own ensures (it completed), by the judge
the user trusts, or by a command whose exit code scores it, its argv from the user's own
evals.toml (`[scorers.NAME] argv = [...]`, :mod:`strato.evals.userconfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strato.agents.calls import judge_runner
from strato.agents.config import AgentsConfig
from strato.agents.process import last_line, run_process
from strato.evals.tasks import Task
from strato.evals.userconfig import EvalConfigError, number, path, table


@dataclass(frozen=True)
class Score:
    value: float  # 1.0 passed, 0.0 failed
    reason: str


def scorer_commands() -> dict[str, tuple[tuple[str, ...], float]]:
    """The scorer commands of the user's own config: name -> (argv, timeout in s)."""
    found: dict[str, tuple[tuple[str, ...], float]] = {}
    for name, row in table().get("scorers", {}).items():
        argv = row.get("argv") if isinstance(row, dict) else None
        if not isinstance(row, dict) or not isinstance(argv, list) or not argv \
                or not all(isinstance(a, str) for a in argv):
            raise EvalConfigError(f"{path()}: [scorers.{name}] argv must be a non-empty list of strings")
        found[name] = (tuple(argv), number(row, "timeout_s", 300, f"[scorers.{name}]"))
    return found


def unknown_scorer(task: Task, commands: dict[str, Any]) -> str | None:
    """Why the task's scorer cannot run here (None: it can)."""
    if task.command is not None and task.command not in commands:
        return (f"scorer command {task.command!r} is not in your own "
                f"{path()} ([scorers.{task.command}] argv = [...])")
    return None


def score(task: Task, completed: bool, output: Any, workspace: Path, config: AgentsConfig,
          commands: dict[str, tuple[tuple[str, ...], float]]) -> Score:
    """The task's score on the workspace as the run left it."""
    if task.command is not None:
        argv, timeout = commands[task.command]
        done = run_process(list(argv), workspace, timeout)
        if isinstance(done, str):
            return Score(0.0, f"scorer {task.command} cannot start: {done}")
        if done.returncode is None:
            return Score(0.0, f"scorer {task.command} timed out after {timeout:g}s")
        if done.returncode != 0:
            why = last_line(done.stderr_tail) or last_line(done.stdout)
            return Score(0.0, f"scorer {task.command} exited {done.returncode}: {why}")
        return Score(1.0, f"scorer {task.command} passed")
    if not completed:
        return Score(0.0, "the run did not complete")
    if task.scorer == "judge":
        spec = config.trusted_judge()
        if spec is None:
            return Score(0.0, "a judge scorer needs a [judge] in agents.toml")
        verdict = judge_runner(spec, workspace)(task.statement, "default", output)
        return Score(1.0 if verdict["holds"] else 0.0, f"judge: {verdict['reason']}")
    return Score(1.0, "the run completed: its ensures held")
