"""What a spec would start, read from its typed steps: the shell commands (`evaluate:`
steps, fanout `pre_merge`) and the agents of its steps and fanout stages, and whether
any ensure is `judged` (the judge runs then). Whether the person chose them is decided
below the flow language, by :mod:`strato.agents.spectrust`, from these plain lists."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from strato.flow.spec import DoStep, EvaluateStep, FanoutStep, JudgedEnsure, SetStep, Spec


@dataclass(frozen=True)
class Starts:
    agents: tuple[str, ...]  # of every step and fanout stage, in document order
    judged: bool
    commands: tuple[str, ...]


def commands(spec: Spec) -> list[str]:
    """Every shell command the spec may run, in document order."""
    found: list[str] = []
    for flow in spec.flow_map.values():
        for step in flow.typed_steps:
            if isinstance(step, EvaluateStep):
                found.append(step.evaluate.command)
            elif isinstance(step, FanoutStep):
                found += step.fanout.pre_merge or []
    return found


def starts(spec: Spec) -> Starts:
    """Everything the spec would start."""
    agents: list[str] = []
    judged = False
    for agent, ensures in _ensured_steps(spec):
        judged = judged or any(isinstance(e, JudgedEnsure) for e in ensures)
        if agent is not None:
            agents.append(agent)
    return Starts(tuple(agents), judged, tuple(commands(spec)))


def _ensured_steps(spec: Spec) -> Iterator[tuple[str | None, list[object]]]:
    """(agent, ensures) of every step and fanout stage: who runs it, what checks it."""
    for flow in spec.flow_map.values():
        for step in flow.typed_steps:
            if isinstance(step, DoStep):
                yield step.agent, list(step.ensure or [])
            elif isinstance(step, SetStep):
                yield None, list(step.ensure or [])
            elif isinstance(step, FanoutStep):
                for stage in step.fanout.steps:
                    yield stage.agent, list(stage.ensure or [])
