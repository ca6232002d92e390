"""The string leaves of a step that may hold `${...}` references, with their paths and
whether they are expressions (where carry references are refused) or rendered text."""

from __future__ import annotations

from dataclasses import dataclass

from strato.flow.refs import string_leaves
from strato.flow.spec import (
    AnyStep,
    DoStep,
    Ensure,
    EvaluateStep,
    ExprEnsure,
    FanoutStep,
    RunStep,
    SetStep,
)


@dataclass(frozen=True)
class Leaf:
    path: str
    text: str
    expression: bool  # when / set / iterate.until / ensure expr
    in_stage: bool  # inside a fanout stage: ${item} and ${prev} are in scope


def _ensure_leaves(ensure: list[Ensure] | None, path: str, in_stage: bool) -> list[Leaf]:
    return [
        Leaf(f"{path}.ensure[{k}].expr", item.expr, True, in_stage)
        for k, item in enumerate(ensure or [])
        if isinstance(item, ExprEnsure)
    ]


def step_leaves(step: AnyStep, path: str) -> list[Leaf]:
    """Leaves in the reference's scan order: do, when, set, iterate.until, ensure,
    with, evaluate.in, fanout.over, then each stage's do, when and ensure."""
    out: list[Leaf] = []
    if isinstance(step, DoStep):
        out.append(Leaf(f"{path}.do", step.do, False, False))
    if step.when is not None:
        out.append(Leaf(f"{path}.when", step.when, True, False))
    if isinstance(step, SetStep):
        out += [Leaf(f"{path}.set.{k}", v, True, False) for k, v in step.set.items()]
    if isinstance(step, DoStep) and step.iterate is not None:
        out.append(Leaf(f"{path}.iterate.until", step.iterate.until, True, False))
    if isinstance(step, DoStep | SetStep):
        out += _ensure_leaves(step.ensure, path, False)
    if isinstance(step, RunStep):
        out += [Leaf(p, t, False, False) for p, t in string_leaves(step.with_, f"{path}.with")]
    if isinstance(step, EvaluateStep):
        leaves = string_leaves(step.evaluate.in_, f"{path}.evaluate.in")
        out += [Leaf(p, t, False, False) for p, t in leaves]
    if isinstance(step, FanoutStep):
        out.append(Leaf(f"{path}.fanout.over", step.fanout.over, False, False))
        for j, stage in enumerate(step.fanout.steps):
            spath = f"{path}.fanout.steps[{j}]"
            out.append(Leaf(f"{spath}.do", stage.do, False, True))
            if stage.when is not None:
                out.append(Leaf(f"{spath}.when", stage.when, True, True))
            out += _ensure_leaves(stage.ensure, spath, True)
    return out
