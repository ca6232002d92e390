"""The run being worked on: its spec, its JSON state, the events an operation emits,
and the frames (the root flow and each running subflow) its steps live in.

Every part of the engine is a function over a `RunContext`; the context itself only
finds things (a frame, a step by path, what a step's templates may read) and records
events, so it sits below all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
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
from strato.runs.engine.table import Table, ordered, peek
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

    def outputs(self) -> Outputs:
        return Outputs(self.steps)


class Outputs(dict[str, Any]):
    """The outputs of a scope's succeeded steps, as a dict, read from its steps only as
    a reference asks for one: a step's text names a few of them, and a scope may hold
    thousands. Anything that lists them (iteration, ``len``, JSON, equality) reads all."""

    def __init__(self, steps: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self._steps: dict[str, dict[str, Any]] | None = steps

    def _find(self, key: str) -> bool:
        if dict.__contains__(self, key):
            return True
        st = dict.get(self._steps, key) if self._steps is not None else None
        if isinstance(st, dict) and st.get("status") == "succeeded" and "output" in st:
            dict.__setitem__(self, key, st["output"])
            return True
        return False

    def _all(self) -> None:
        if self._steps is not None:
            for key in list(dict.keys(self._steps)):
                self._find(key)
            self._steps = None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._find(key)

    def __missing__(self, key: str) -> Any:
        if self._find(key):
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        return dict.__getitem__(self, key) if self._find(key) else default

    def __iter__(self) -> Iterator[str]:
        self._all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._all()
        return dict.__len__(self)

    def __eq__(self, other: object) -> bool:
        self._all()
        return dict.__eq__(self, other)

    def __repr__(self) -> str:
        self._all()
        return dict.__repr__(self)

    def keys(self) -> Any:
        self._all()
        return dict.keys(self)

    def items(self) -> Any:
        self._all()
        return dict.items(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)

    def copy(self) -> dict[str, Any]:
        return dict(self.items())


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
        steps = self.info(frame.name).steps
        for sid in self.in_status(frame, ("running",)):
            if isinstance(step := steps[sid], RunStep):
                yield from self.frames(self.child_frame(frame, step, frame.steps[sid]))

    def in_status(self, frame: Frame, statuses: Collection[str]) -> list[str]:
        """The ids of the frame's steps whose status is one of ``statuses``, in the
        flow's order: from the root table's index when it has one (no step is read)."""
        steps, info = frame.steps, self.info(frame.name)
        keys = steps.having(statuses) if isinstance(steps, Table) else None
        if keys is None:
            return [sid for sid in info.order if peek(steps, sid)["status"] in statuses]
        return ordered(keys, info.order)

    def locate(self, path: str) -> tuple[Frame, AnyStep, dict[str, Any]]:
        frame, step = self._find(path)
        return frame, step, frame.steps[step.id]

    def look(self, path: str) -> tuple[Frame, AnyStep, dict[str, Any]]:
        """:meth:`locate`, with the step's state to read only (not taken: not copied)."""
        frame, step = self._find(path)
        return frame, step, peek(frame.steps, step.id)

    def _find(self, path: str) -> tuple[Frame, AnyStep]:
        for frame in self.frames():
            rest = path[len(frame.prefix) :] if path.startswith(frame.prefix) else None
            if rest is not None and "/" not in rest:
                step = self.info(frame.name).steps.get(rest)
                if step is not None:
                    return frame, step
        raise Refused("unknown_step", f"no step {path!r} in this run")

    def scope_for(self, frame: Frame) -> Scope:
        carry = {k: v["value"] for k, v in self.run["carry"].items()} if frame.parent is None else {}
        return Scope(input=frame.scope["input"], outputs=frame.outputs(), carry=carry)

    def require_running(self) -> None:
        if self.run["status"] != "running":
            raise Refused("run_not_running", f"run is {self.run['status']}")
