"""One eval run: every task of a set, `repeat` times, through the real engine
(:class:`strato.runs.service.Runs`, as `strato run` drives it) in a scratch copy of its
fixture, each result appended to the eval's ref as it finishes (:mod:`strato.evals.store`).

The scratch workspace is one repository under `.git/vivary/evals/<id>/work`, its files
replaced by the next task's fixture before each task: its runs and lanes
(`refs/vivary/lanes`) accumulate there as they would in a workspace that does task after
task. The agents, judge and gate policy are the ones this workspace trusts; the flow is
the one the person named at their prompt, with `--agent` written into its steps, and
approved for the scratch repository as `strato run FILE` approves it. A killed run is
taken up by running the same command again: finished tasks are not run again, a task
cut short is run afresh from its fixture."""

from __future__ import annotations

import hashlib
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from strato.agents import spectrust, trust
from strato.agents.config import AgentConfigError, AgentsConfig
from strato.evals import store
from strato.evals.scorers import score, scorer_commands, unknown_scorer
from strato.evals.tasks import Layer, Task, layer_files
from strato.flow.starts import starts
from strato.flow.validate import load_spec
from strato.runs.engine.state import RUN_TERMINAL, Refused
from strato.runs.service import Runs, SpecInvalid
from strato.runs.store import RunSnapshot
from tropo.canonical import canonicalize
from tropo.fs.rooted import UnsafePath, check_relative, write_within
from tropo.git import gitcli
from tropo.git.repo import private_dir
from tropo.git.types import Repository

TRIAL_FIELD = "trial"  # an entry-input field the runner fills with "<seed>:<trial>"


class FlowError(Exception):
    """The flow file cannot be used for an eval (a usage error: exit 2)."""


@dataclass(frozen=True)
class EvalPlan:
    """What one eval runs, as the person named it."""

    set_dir: Path
    tasks: list[Task]
    flow_name: str
    flow_text: str  # the spec with `--agent` in its `do` steps
    agent: str
    lanes: bool
    repeat: int
    seed: int
    # files laid over every task's fixture (a proposal being promoted), by relative path
    overlay: tuple[tuple[str, bytes], ...] = ()

    def config(self) -> dict[str, Any]:
        """`eval.json`: enough to refuse a resume with anything else, and to pair runs."""
        doc: dict[str, Any] = {
            "set": {"name": self.set_dir.name, "tasks": {t.id: t.digest for t in self.tasks}},
            "flow": {"name": self.flow_name, "sha256": hashlib.sha256(self.flow_text.encode()).hexdigest()},
            "agent": self.agent, "lanes": self.lanes, "repeat": self.repeat, "seed": self.seed,
        }
        if self.overlay:
            doc["overlay"] = {rel: hashlib.sha256(data).hexdigest() for rel, data in self.overlay}
        return doc

    def default_id(self) -> str:
        """The same command names the same eval, so running it again resumes it."""
        return "e-" + hashlib.sha256(canonicalize(self.config()).encode()).hexdigest()[:12]


def with_agent(text: str, agent: str) -> tuple[str, bool]:
    """The flow with every `do` step (and fanout stage) done by `agent`, and whether its
    entry input declares the trial field."""
    try:
        doc = yaml.safe_load(text)
        flows = doc["flows"]
        entry = flows[flows["entry"]]
    except (yaml.YAMLError, TypeError, KeyError) as exc:
        raise FlowError(f"not a flow spec: {exc}") from None
    for name, flow in flows.items():
        if name == "entry" or not isinstance(flow, dict):
            continue
        for step in flow.get("steps") or []:
            stages = (step.get("fanout") or {}).get("steps", []) if isinstance(step, dict) else []
            for each in [step, *stages]:
                if isinstance(each, dict) and "do" in each:
                    each["agent"] = agent
    declared = isinstance(entry, dict) and TRIAL_FIELD in (entry.get("input") or {})
    return yaml.safe_dump(doc, sort_keys=False), declared


def check_plan(plan: EvalPlan, config: AgentsConfig) -> None:
    """Refuse, before anything is written, a flow that does not validate here, an agent
    that is not configured and trusted, or an overlay path outside the work tree."""
    for rel, _ in plan.overlay:
        try:
            if check_relative(rel).parts[0] == ".git":
                raise UnsafePath(f"path enters .git: {rel!r}")
        except UnsafePath as exc:
            raise FlowError(f"cannot lay {rel!r} over the fixtures: {exc}") from None
    spec, errors = load_spec(plan.flow_text, config.known | {plan.agent})
    if spec is None:
        raise SpecInvalid(errors)
    try:
        config.get(plan.agent)
    except AgentConfigError as exc:
        raise AgentConfigError(f"{exc} nor in your own agents.toml") from None


def scratch(repo: Repository, eval_id: str) -> Path:
    """The eval's scratch repository (made on first use)."""
    work = private_dir(repo, "evals", eval_id, create=True) / "work"
    if not (work / ".git").exists():
        work.mkdir(exist_ok=True)
        gitcli.init(work)
    return work


def _refill(work: Path, fixture: tuple[Layer, ...], overlay: tuple[tuple[str, bytes], ...]) -> None:
    """The scratch work tree becomes exactly the fixture's folders, layered, then the
    overlay (its `.git` stays; an overlay path that would leave it or enter `.git` is
    refused by :func:`check_plan`)."""
    for child in work.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    for layer in fixture:
        for rel, data in layer_files(layer).items():
            if ".git" not in rel.split("/"):
                write_within(work, rel, data)
    for name, data in overlay:
        write_within(work, name, data)


def run_eval(repo: Repository, plan: EvalPlan, eval_id: str, config: AgentsConfig,
             on_result: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run every (task, trial) the eval has no result for yet; all its results."""
    commands = scorer_commands()
    done = {(r["task"], r["trial"]) for r in store.start(repo, eval_id, plan.config())}
    work = scratch(repo, eval_id)
    _, declared = with_agent(plan.flow_text, plan.agent)
    found = load_spec(plan.flow_text, config.known | {plan.agent})[0]
    if found is not None and starts(found).commands:
        spectrust.approve(work, f"eval {eval_id}", plan.flow_text)
    for trial in range(plan.repeat):
        for task in plan.tasks:
            if (task.id, trial) in done:
                continue
            inputs = dict(task.input)
            if declared:
                inputs.setdefault(TRIAL_FIELD, f"{plan.seed}:{trial}")
            result = _one(work, plan, task, trial, inputs, config, commands)
            store.add(repo, eval_id, result)
            if on_result is not None:
                on_result(result)
    return store.load(repo, eval_id)[1]


def _one(work: Path, plan: EvalPlan, task: Task, trial: int, inputs: dict[str, Any],
         config: AgentsConfig, commands: dict[str, tuple[tuple[str, ...], float]]) -> dict[str, Any]:
    """One task, once: its result row."""
    row: dict[str, Any] = {"task": task.id, "trial": trial, "digest": task.digest, "score": 0.0,
                           "attempts": 0, "verifierCalls": 0, "tokens": 0, "wallMs": 0, "runId": None}
    broken = task.problem or unknown_scorer(task, commands)
    if broken is not None or not task.fixture:
        return {**row, "outcome": "broken", "reason": broken}
    _refill(work, task.fixture, plan.overlay)
    runs = Runs(work, config=config, lanes=plan.lanes)
    run_id = f"{task.id}-{trial}-{secrets.token_hex(3)}"  # a task cut short runs afresh under a new id
    started = time.monotonic()
    try:
        runs.plan(plan.flow_text, inputs, run_id)
        snap = runs.drive(run_id)
    except (Refused, SpecInvalid, trust.Untrusted, AgentConfigError) as exc:
        ms = int((time.monotonic() - started) * 1000)
        why = f"the run was refused: {exc}"
        return {**row, "runId": run_id, "wallMs": ms, "outcome": "error", "reason": why}
    row.update(runId=run_id, **_measures(runs, snap))
    if snap.state["status"] not in RUN_TERMINAL:
        why = "the run waits at a gate: an eval flow must run unattended"
        return {**row, "wallMs": int((time.monotonic() - started) * 1000), "outcome": "error", "reason": why}
    completed = snap.state["status"] == "completed"
    got = score(task, completed, snap.state.get("output"), work, config, commands)
    row["wallMs"] = int((time.monotonic() - started) * 1000)
    row["score"] = got.value
    failure = (snap.state.get("failure") or {}).get("reason")
    reason = got.reason if got.value or failure is None else f"{failure}; {got.reason}"
    return {**row, "outcome": "success" if got.value >= 1.0 else "failure", "reason": reason}


def _measures(runs: Runs, snap: RunSnapshot) -> dict[str, Any]:
    """What the run spent: agent attempts (each a hand-out, `ready`), costly checks that
    ran, tokens (agents' and the judge's)."""
    audit = runs.audit(snap.run_id)
    attempts = [ev for ev in audit["events"] if ev["type"] in ("ready", "fanout_item_ready")]
    judged = [ev for ev in audit["events"] if ev["type"] == "judged"]
    tokens = float(audit["flowSpent"].get("tokens", 0))
    for ev in judged:
        tokens += float((ev.get("detail", {}).get("usage") or {}).get("tokens", 0))
    return {"attempts": len(attempts), "verifierCalls": len(judged), "tokens": int(tokens),
            "status": snap.state["status"]}
