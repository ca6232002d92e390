"""The run being worked on: its spec, its JSON state, the events an operation emits,
and the frames (the root flow and each running subflow) its steps live in.

Every part of the engine is a function over a `RunContext`; the context itself only
finds things (a frame, a step by path, what a step's templates may read) and records
events, so it sits below all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from strato.flow.refs import Scope
from strato.flow.spec import AnyStep, Flow, RunStep, Spec
from strato.runs.engine.checks import Judge
from strato.runs.engine.ledger import Ledger
from strato.runs.engine.planning import FlowInfo, flow_info
from strato.runs.engine.state import Refused, now_iso
from strato.runs.lanes.model import LaneBook


@dataclass(frozen=True)
class Evaluation:
    """What an `evaluate` step's command produced: its output, or why it failed."""

    output: Any
    failure: str | None
    duration_ms: int


# command, input value, timeout in ms -> what the command produced (strato.runs.dispatch)
Evaluator = Callable[[str, Any, int | None], Evaluation]


@dataclass
class Frame:
    """One flow scope being advanced: the root run or a subflow under a `run` step."""

    name: str
    flow: Flow
    scope: dict[str, Any]
    prefix: str
    ledgers: list[Ledger]
    parent: tuple[Frame, RunStep] | None = None

    @property
    def steps(self) -> dict[str, dict[str, Any]]:
        steps: dict[str, dict[str, Any]] = self.scope["steps"]  # run.json is plain JSON
        return steps

    def outputs(self) -> dict[str, Any]:
        return {
            k: st["output"] for k, st in self.steps.items() if st["status"] == "succeeded" and "output" in st
        }


@dataclass
class RunContext:
    """A run and what an operation on it needs; `infos` may be shared between contexts
    of the same spec revision (it is derived from the spec alone)."""

    spec: Spec
    run: dict[str, Any]
    root: Path | None = None
    judge: Judge | None = None
    evaluator: Evaluator | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    clock: Callable[[], str] = now_iso
    infos: dict[str, FlowInfo] = field(default_factory=dict)
    lanes: LaneBook | None = None  # adaptive verification (strato.runs.engine.verification)

    def emit(self, kind: str, step: str | None = None, **detail: Any) -> None:
        event: dict[str, Any] = {"at": self.clock(), "type": kind}
        if step is not None:
            event["stepId"] = step
        if detail:
            event["detail"] = detail
        self.events.append(event)

    def info(self, name: str) -> FlowInfo:
        if name not in self.infos:
            flow = self.spec.flow(name)
            assert flow is not None
            self.infos[name] = flow_info(flow)
        return self.infos[name]

    @cached_property
    def root_frame(self) -> Frame:
        flow = self.spec.flow(self.run["flow"])
        assert flow is not None
        ledger = Ledger("flow", flow.budget, self.run["flowSpent"])
        return Frame(self.run["flow"], flow, self.run["scope"], "", [ledger])

    def forget_frames(self) -> None:
        """The run's scope was replaced (a checkpoint restore): rebuild the frames."""
        self.__dict__.pop("root_frame", None)

    def child_frame(self, frame: Frame, step: RunStep, st: dict[str, Any]) -> Frame:
        flow = self.spec.flow(step.run)
        assert flow is not None
        ledgers = [*frame.ledgers, Ledger("subflow", step.budget, st["spent"])]
        return Frame(step.run, flow, st["sub"], f"{frame.prefix}{step.id}/", ledgers, (frame, step))

    def frames(self, frame: Frame | None = None) -> Iterator[Frame]:
        frame = frame or self.root_frame
        yield frame
        for step in frame.flow.typed_steps:
            if isinstance(step, RunStep) and (st := frame.steps[step.id])["status"] == "running":
                yield from self.frames(self.child_frame(frame, step, st))

    def locate(self, path: str) -> tuple[Frame, AnyStep, dict[str, Any]]:
        for frame in self.frames():
            rest = path[len(frame.prefix) :] if path.startswith(frame.prefix) else None
            if rest is not None and "/" not in rest:
                step = frame.flow.step(rest)
                if step is not None:
                    return frame, step, frame.steps[rest]
        raise Refused("unknown_step", f"no step {path!r} in this run")

    def scope_for(self, frame: Frame) -> Scope:
        carry = {k: v["value"] for k, v in self.run["carry"].items()} if frame.parent is None else {}
        return Scope(input=frame.scope["input"], outputs=frame.outputs(), carry=carry)

    def require_running(self) -> None:
        if self.run["status"] != "running":
            raise Refused("run_not_running", f"run is {self.run['status']}")
