"""Adaptive verification in a run: before an output's costly checks (the `judged`
ensures of a `do` step, a `set` step or a fanout stage, an `evaluate` step's command)
the engine asks the output's lane whether it is checked, records the decision with the
lane's evidence (`verified` or `skipped` events), and afterwards records what the output
showed as evidence for the lane.

Deterministic checks (contracts, expressions, file predicates) always run; a judged
ensure with `stakes: paranoid` always runs; an `evaluate` step whose output a later
step or the flow output reads always runs. Without a `LaneBook` (an engine used on its
own) every check runs and nothing is recorded. The rule itself is `strato.runs.lanes.model`;
the decision's nonce is drawn here, after the output exists, so no agent can know in
advance whether its output will be checked. An engine-mode fanout's items run outside
the engine (`strato.runs.dispatch.fanout`): `ItemLanes` makes their decisions there and keeps
them on the item until the engine records it (`take_item`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strato.flow.leaves import step_leaves
from strato.flow.spec import (
    AnyStep,
    DoStep,
    Ensure,
    EvaluateStep,
    FanoutStep,
    GateStep,
    JudgedEnsure,
    SetStep,
    Spec,
)
from strato.runs.engine.context import Frame, RunContext
from strato.runs.lanes.model import Lane, LaneBook, decide, digest

HIGH_STAKES = "paranoid"  # Stratum v1's strongest judged stakes: never skipped
COMMAND = "command"  # the agent of an evaluate step's lane
SET = "set"  # the agent of a set step's lane: its own expressions made the output

Event = tuple[str, dict[str, Any]]  # (kind, detail) of an event to emit


@dataclass(frozen=True)
class Output:
    """One output a lane decides on and learns from: the path its events are recorded
    under (and its draw is seeded with), its epoch and attempt, and the digests of the
    spec that asked for it and of its agent's configuration."""

    lane: Lane
    path: str
    epoch: int
    attempt: int
    digests: tuple[str, str]
    where: Mapping[str, Any]  # {"stage": i} for a fanout stage, recorded with its evidence


def output(
    spec: Spec,
    book: LaneBook,
    flow: str,
    step: AnyStep,
    at: tuple[str, int, int],
    stage: int | None = None,
) -> Output:
    """The output of `step` (of its stage `stage`, for a fanout) in flow `flow`, at
    `at` (path, epoch, attempt). A fanout stage's lane is `flow/<step>.<stage>/agent`."""
    if stage is not None:
        assert isinstance(step, FanoutStep)
        part = step.fanout.steps[stage]
        lane, contract, where = Lane(flow, f"{step.id}.{stage}", part.agent), part.out, {"stage": stage}
        body = {"fanout": step.id, "stage": stage, **part.model_dump(mode="json", exclude_none=True)}
    else:
        agent = step.agent if isinstance(step, DoStep) else SET if isinstance(step, SetStep) else COMMAND
        lane, contract, where = Lane(flow, step.id, agent), getattr(step, "out", None), {}
        body = step.model_dump(mode="json", by_alias=True, exclude_none=True)
    spec_digest = digest({"flow": flow, "step": body, "contract": spec.contracts.get(contract or "")})
    return Output(lane, *at, (spec_digest, book.configs.get(lane.agent, digest(lane.agent))), where)


def _judged(ensures: list[Ensure] | None) -> list[int]:
    return [i for i, e in enumerate(ensures or []) if isinstance(e, JudgedEnsure)]


def judged_decision(
    book: LaneBook, out: Output, run_id: str, ensures: list[Ensure] | None
) -> tuple[frozenset[int], Event | None]:
    """The judged ensures not to run on this output (paranoid ones never are) and the
    decision's event (None: there is no judged ensure to decide on)."""
    judged = _judged(ensures)
    if not judged:
        return frozenset(), None
    seed = (run_id, out.path, out.epoch, out.attempt)
    decision = decide(out.lane, book.records.get(out.lane.key), out.digests, seed, secrets.token_hex(16))
    kept = [i for i in judged if _stakes(ensures, i) == HIGH_STAKES]
    sampled = [i for i in judged if i not in kept]
    if decision.verify or not sampled:
        reason = decision.reason if sampled else "high stakes: never skipped"
        detail = {"check": "judged", **out.where, "reason": reason, "ensures": judged}
        return frozenset(), ("verified", {**detail, **decision.evidence})
    detail = {"check": "judged", **out.where, "reason": decision.reason, "ensures": sampled}
    return frozenset(sampled), ("skipped", {**detail, "highStakes": kept, **decision.evidence})


def _stakes(ensures: list[Ensure] | None, i: int) -> str:
    ensure = (ensures or [])[i]
    assert isinstance(ensure, JudgedEnsure)
    return ensure.judged.stakes


def evidence(out: Output, run_id: str, kind: str, **extra: Any) -> dict[str, Any]:
    """One piece of evidence for the output's lane (the caller adds when: `at`)."""
    return {
        "kind": kind,
        "lane": out.lane.key,
        "runId": run_id,
        "stepId": out.path,
        "attempt": out.attempt,
        **out.where,
        "specDigest": out.digests[0],
        "configDigest": out.digests[1],
        **extra,
    }


def outcome(out: Output, run_id: str, failure: str | None, checked: bool) -> dict[str, Any]:
    """What the output showed: a failure of any kind resets the lane; a clean output
    counts only if a costly check ran on it."""
    kind = "failure" if failure is not None else ("clean" if checked else "skipped")
    why = {} if failure is None else {"reason": failure[:300]}
    return evidence(out, run_id, kind, checked=checked, **why)


def learn(ctx: RunContext, items: list[dict[str, Any]]) -> None:
    """Hand evidence to the service, which folds it into the lanes around the run's
    transition (`strato.runs.service`)."""
    if ctx.lanes is not None:
        ctx.lanes.evidence += [{**item, "at": ctx.clock()} for item in items]


# --- a step's own output


def _step_output(ctx: RunContext, frame: Frame, step: AnyStep, st: dict[str, Any], attempt: int) -> Output:
    assert ctx.lanes is not None
    return output(ctx.spec, ctx.lanes, frame.name, step, (frame.prefix + step.id, int(st["epoch"]), attempt))


def judged_to_skip(
    ctx: RunContext, frame: Frame, step: DoStep | SetStep, st: dict[str, Any]
) -> frozenset[int]:
    """The indices of the step's judged ensures not to run on this output; records the
    decision."""
    if ctx.lanes is None or not _judged(step.ensure):
        return frozenset()
    return _decided(ctx, ctx.lanes, _step_output(ctx, frame, step, st, len(st["attempts"]) + 1),
                    step.ensure)


def _decided(ctx: RunContext, book: LaneBook, out: Output, ensures: list[Ensure] | None) -> frozenset[int]:
    """`judged_decision` for an output of this run, its event emitted."""
    skip, event = judged_decision(book, out, str(ctx.run["id"]), ensures)
    if event is not None:
        ctx.emit(event[0], out.path, **event[1])
    return skip


def record(
    ctx: RunContext,
    frame: Frame,
    step: AnyStep,
    st: dict[str, Any],
    failure: str | None,
    skipped: frozenset[int] | bool = frozenset(),
) -> None:
    """What this output showed, as evidence for its lane (`skipped`: the judged ensures
    not run, or True for an evaluate step whose command did not run)."""
    if ctx.lanes is None or not _has_lane(step):
        return
    if isinstance(step, EvaluateStep):
        checked = not skipped
    else:
        assert isinstance(skipped, frozenset)
        checked = bool(set(_judged(getattr(step, "ensure", None))) - skipped)
    out = _step_output(ctx, frame, step, st, len(st["attempts"]) + 1)
    learn(ctx, [outcome(out, str(ctx.run["id"]), failure, checked)])


def _has_lane(step: AnyStep) -> bool:
    if isinstance(step, EvaluateStep):
        return True
    if isinstance(step, FanoutStep):
        return any(_judged(stage.ensure) for stage in step.fanout.steps)
    return isinstance(step, DoStep | SetStep) and bool(_judged(step.ensure))


def skip_evaluate(ctx: RunContext, frame: Frame, step: EvaluateStep, st: dict[str, Any]) -> bool:
    """Decide whether an evaluate step's command runs; True when it is skipped (the
    step is then `skipped`, like a step whose `when` is false)."""
    if ctx.lanes is None:
        return False
    out = _step_output(ctx, frame, step, st, len(st["attempts"]) + 1)
    seed = (str(ctx.run["id"]), out.path, out.epoch, out.attempt)
    decision = decide(out.lane, ctx.lanes.records.get(out.lane.key), out.digests, seed, secrets.token_hex(16))
    if not decision.verify and _output_read(frame, step.id):
        ctx.emit("verified", out.path, check="evaluate", reason="its output is read later: never skipped",
                 **decision.evidence)
        return False
    if decision.verify:
        ctx.emit("verified", out.path, check="evaluate", reason=decision.reason, **decision.evidence)
        return False
    record(ctx, frame, step, st, None, skipped=True)
    st["status"] = "skipped"
    ctx.emit("skipped", out.path, check="evaluate", reason=decision.reason, **decision.evidence)
    return True


def _output_read(frame: Frame, step_id: str) -> bool:
    """Whether any other step or the flow output mentions the step (a reference or an
    expression naming it): conservative, a mention is taken as a read."""
    word = re.compile(rf"(?<![\w-]){re.escape(step_id)}(?![\w-])")
    texts = [frame.flow.output.from_]
    for other in frame.flow.typed_steps:
        if other.id != step_id:
            texts += [leaf.text for leaf in step_leaves(other, "")]
    return any(word.search(text) for text in texts)


# --- a fanout stage's output


def stage_judged_to_skip(
    ctx: RunContext, frame: Frame, step: FanoutStep, it: dict[str, Any], attempt: int
) -> frozenset[int]:
    """`judged_to_skip` for a consumer item's current stage."""
    stage = step.fanout.steps[it["stage"]]
    if ctx.lanes is None or not _judged(stage.ensure):
        return frozenset()
    return _decided(ctx, ctx.lanes, _item_output(ctx, frame, step, it, attempt), stage.ensure)


def record_stage(
    ctx: RunContext,
    frame: Frame,
    step: FanoutStep,
    it: dict[str, Any],
    attempt: int,
    failure: str | None,
    skipped: frozenset[int] = frozenset(),
) -> None:
    """`record` for a consumer item's current stage."""
    judged = _judged(step.fanout.steps[it["stage"]].ensure)
    if ctx.lanes is None or not judged:
        return
    out = _item_output(ctx, frame, step, it, attempt)
    learn(ctx, [outcome(out, str(ctx.run["id"]), failure, bool(set(judged) - skipped))])


def _item_output(ctx: RunContext, frame: Frame, step: FanoutStep, it: dict[str, Any], attempt: int) -> Output:
    assert ctx.lanes is not None
    at = (f"{frame.prefix}{step.id}/{it['index']}", int(frame.steps[step.id]["epoch"]), attempt)
    return output(ctx.spec, ctx.lanes, frame.name, step, at, it["stage"])


class ItemLanes:
    """The lanes of an engine-mode fanout's stages, for the service's worker threads,
    which run items outside the engine: each decision and each piece of evidence is kept
    on the item's result (`events`, `evidence`) until the engine records the item.
    Every item decides by the lanes as they stood when the fanout's items started."""

    def __init__(self, ctx: RunContext, frame: Frame, step: FanoutStep) -> None:
        assert ctx.lanes is not None
        self.spec, self.book, self.flow, self.step = ctx.spec, ctx.lanes, frame.name, step
        self.path, self.epoch = frame.prefix + step.id, int(frame.steps[step.id]["epoch"])
        self.run_id = str(ctx.run["id"])

    def _output(self, item: dict[str, Any], stage: int, attempt: int) -> Output:
        at = (f"{self.path}/{item['index']}", self.epoch, attempt)
        return output(self.spec, self.book, self.flow, self.step, at, stage)

    def judged_to_skip(self, item: dict[str, Any], stage: int, attempt: int) -> frozenset[int]:
        ensures = self.step.fanout.steps[stage].ensure
        if not _judged(ensures):
            return frozenset()
        skip, event = judged_decision(self.book, self._output(item, stage, attempt), self.run_id, ensures)
        if event is not None:
            item.setdefault("events", []).append(list(event))
        return skip

    def record(
        self, item: dict[str, Any], stage: int, attempt: int, failure: str | None, skipped: frozenset[int]
    ) -> None:
        judged = _judged(self.step.fanout.steps[stage].ensure)
        if judged:
            out = self._output(item, stage, attempt)
            found = outcome(out, self.run_id, failure, bool(set(judged) - skipped))
            item.setdefault("evidence", []).append(found)


def override(ctx: RunContext, frame: Frame, gate: GateStep, decision: str, by: str) -> None:
    """A gate sent the flow back or killed it: the lanes whose outputs led to it passed
    their checks and were overruled, so each resets (every judged stage of a fanout)."""
    if ctx.lanes is None:
        return
    info = ctx.info(frame.name)
    above: set[str] = set()
    stack = [gate.id]
    while stack:
        for dep in info.graph.dependencies(stack.pop()):
            if dep not in above:
                above.add(dep)
                stack.append(dep)
    reason = f"gate {gate.id} {decision} by {by}"
    found = []
    for step in frame.flow.typed_steps:
        st = frame.steps[step.id]
        if step.id not in above or not _has_lane(step) or st["status"] != "succeeded":
            continue
        at = (frame.prefix + step.id, int(st["epoch"]), len(st["attempts"]))
        stages: list[int | None] = [None]
        if isinstance(step, FanoutStep):
            stages = [i for i, part in enumerate(step.fanout.steps) if _judged(part.ensure)]
        for stage in stages:
            out = output(ctx.spec, ctx.lanes, frame.name, step, at, stage)
            found.append(evidence(out, str(ctx.run["id"]), "override", reason=reason))
    learn(ctx, found)
