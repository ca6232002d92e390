"""Promotion: a skill or playbook proposal of the heartbeat is applied only if an eval
says it makes nothing worse. The gate is the user's own `[promotion]` in evals.toml (a
task set, a flow, an agent, a margin): the set runs once as it is (the baseline, kept
and reused under its id) and once with the proposal's files laid over every task's
fixture; a drop in success rate beyond `margin` refuses the apply. Either way the
comparison is recorded in the proposal's history, and an applied proposal's commit
carries it beside its diff."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from strato.agents import trust
from strato.agents.config import AgentConfigError
from strato.evals import store
from strato.evals.compare import compare
from strato.evals.runner import EvalPlan, FlowError, check_plan, run_eval, with_agent
from strato.evals.tasks import TaskSetError, load_set
from strato.evals.userconfig import EvalConfigError, number, path, table
from strato.runs.service import Runs, SpecInvalid

KINDS = ("skill", "playbook")


class PromotionError(Exception):
    """The gate cannot run as configured (a configuration error: exit 2)."""


@dataclass(frozen=True)
class Gate:
    set_dir: Path
    flow: Path
    agent: str
    lanes: bool
    repeat: int
    margin: float  # the largest drop in success rate allowed (0.05: five points)


def gate(root: Path) -> Gate | None:
    """The user's `[promotion]` (None: proposals are applied without an eval)."""
    try:
        row = table().get("promotion")
    except EvalConfigError as exc:
        raise PromotionError(str(exc)) from None
    if row is None:
        return None
    where = f"{path()}: [promotion]"
    if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("set", "flow", "agent")):
        raise PromotionError(f"{where} needs set, flow and agent (text)")
    if unknown := set(row) - {"set", "flow", "agent", "lanes", "repeat", "margin"}:
        raise PromotionError(f"{where}: unknown keys {sorted(unknown)}")
    repeat = row.get("repeat", 1)
    if not isinstance(row.get("lanes", False), bool) or type(repeat) is not int or repeat < 1:
        raise PromotionError(f"{where}: lanes is true or false, repeat a whole number from 1")
    try:
        margin = number(row, "margin", 0.0, "[promotion]", positive=False)
    except EvalConfigError as exc:
        raise PromotionError(str(exc)) from None
    return Gate(root / row["set"], root / row["flow"], row["agent"], row.get("lanes", False),
                repeat, margin)


def evaluate(root: Path, pid: str, files: dict[str, bytes], chosen: Gate) -> dict[str, Any]:
    """Run the gate's eval without and with the proposal's files: the evidence, with
    `passed` false when the success rate fell by more than the margin."""
    runs = Runs(root)
    try:
        text = with_agent(chosen.flow.read_text("utf-8"), chosen.agent)[0]
        base = EvalPlan(chosen.set_dir, load_set(chosen.set_dir), chosen.flow.name, text, chosen.agent,
                        chosen.lanes, chosen.repeat, 0)
        candidate = replace(base, overlay=tuple(sorted(files.items())))
        check_plan(candidate, runs.config)
    except (OSError, UnicodeDecodeError, TaskSetError, FlowError, AgentConfigError, SpecInvalid,
            trust.Untrusted, EvalConfigError) as exc:
        raise PromotionError(f"the promotion eval cannot run: {exc}") from None
    ids = (f"promote-base-{base.default_id()[2:]}", f"promote-{pid}-{candidate.default_id()[2:10]}")
    for plan, eval_id in zip((base, candidate), ids, strict=True):
        run_eval(runs.repo, plan, eval_id, runs.config)
    doc = compare((ids[0], *store.load(runs.repo, ids[0])), (ids[1], *store.load(runs.repo, ids[1])))
    diff = doc["difference"]
    return {
        "baseline": ids[0], "candidate": ids[1],
        "baselineRate": doc["a"]["successRate"], "candidateRate": doc["b"]["successRate"],
        "difference": diff["successRate"], "ci": diff["ci"], "margin": chosen.margin,
        "flipped": [f"{f['task']} -> {f['to']}" for f in doc["flipped"]],
        "passed": diff["successRate"] >= -chosen.margin,
    }


def line(evidence: dict[str, Any]) -> str:
    """The evidence in one line, for a commit message and a refusal."""
    return (f"eval {evidence['candidate']} vs {evidence['baseline']}: success "
            f"{evidence['baselineRate']:.1%} -> {evidence['candidateRate']:.1%} "
            f"({evidence['difference']:+.1%}, 95% CI {evidence['ci'][0]:+.1%} .. {evidence['ci'][1]:+.1%}; "
            f"margin {evidence['margin']:.1%})")
