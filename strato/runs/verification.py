"""Adaptive verification in a run: before a step's costly checks (its `judged` ensures,
an `evaluate` step's command) the engine asks the step's lane whether this output is
checked, records the decision with the lane's evidence (`verified` or `skipped`
events), and afterwards records what the output showed as evidence for the lane.

Deterministic checks (contracts, expressions, file predicates) always run; a judged
ensure with `stakes: paranoid` always runs; an `evaluate` step whose output a later
step or the flow output reads always runs. Without a `LaneBook` (an engine used on its
own) every check runs and nothing is recorded. The rule itself is `strato.runs.lanes`;
the decision's nonce is drawn here, after the output exists, so no agent can know in
advance whether its output will be checked.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from strato.flow.leaves import step_leaves
from strato.flow.spec import AnyStep, DoStep, EvaluateStep, GateStep, JudgedEnsure
from strato.runs.context import Frame, RunContext
from strato.runs.lanes import Decision, Lane, decide, digest

HIGH_STAKES = "paranoid"  # Stratum v1's strongest judged stakes: never skipped
COMMAND = "command"  # the agent of an evaluate step's lane


def _lane(frame: Frame, step: AnyStep) -> Lane:
    agent = step.agent if isinstance(step, DoStep) else COMMAND
    return Lane(frame.name, step.id, agent)


def _digests(ctx: RunContext, frame: Frame, step: AnyStep, lane: Lane) -> tuple[str, str]:
    assert ctx.lanes is not None
    out = getattr(step, "out", None)
    body = step.model_dump(mode="json", by_alias=True, exclude_none=True)
    spec = digest({"flow": frame.name, "step": body, "contract": ctx.spec.contracts.get(out or "")})
    return spec, ctx.lanes.configs.get(lane.agent, digest(lane.agent))


def _decide(ctx: RunContext, frame: Frame, step: AnyStep, st: dict[str, Any]) -> tuple[Lane, Decision]:
    assert ctx.lanes is not None
    lane = _lane(frame, step)
    seed = (str(ctx.run["id"]), frame.prefix + step.id, int(st["epoch"]), len(st["attempts"]) + 1)
    record = ctx.lanes.records.get(lane.key)
    return lane, decide(lane, record, _digests(ctx, frame, step, lane), seed, secrets.token_hex(16))


def judged_to_skip(ctx: RunContext, frame: Frame, step: DoStep, st: dict[str, Any]) -> frozenset[int]:
    """The indices of the step's judged ensures not to run on this output (paranoid
    ones never are); records the decision."""
    judged = {i: e for i, e in enumerate(step.ensure or []) if isinstance(e, JudgedEnsure)}
    if not judged or ctx.lanes is None:
        return frozenset()
    _, decision = _decide(ctx, frame, step, st)
    kept = [i for i, e in judged.items() if e.judged.stakes == HIGH_STAKES]
    sampled = [i for i in judged if i not in kept]
    path = frame.prefix + step.id
    if decision.verify or not sampled:
        reason = decision.reason if sampled else "high stakes: never skipped"
        ctx.emit("verified", path, check="judged", reason=reason, ensures=list(judged), **decision.evidence)
        return frozenset()
    ctx.emit(
        "skipped", path, check="judged", reason=decision.reason, ensures=sampled, highStakes=kept,
        **decision.evidence,
    )
    return frozenset(sampled)


def record(
    ctx: RunContext,
    frame: Frame,
    step: AnyStep,
    st: dict[str, Any],
    failure: str | None,
    skipped: frozenset[int] | bool = frozenset(),
) -> None:
    """What this output showed, as evidence for its lane: a failure of any kind resets
    it; a clean output counts only if a costly check ran on it."""
    if ctx.lanes is None or not _has_lane(step):
        return
    if isinstance(step, DoStep):
        judged = {i for i, e in enumerate(step.ensure or []) if isinstance(e, JudgedEnsure)}
        checked = bool(judged - set(skipped)) if not isinstance(skipped, bool) else not skipped
    else:
        checked = not skipped
    kind = "failure" if failure is not None else ("clean" if checked else "skipped")
    why = {} if failure is None else {"reason": failure[:300]}
    _evidence(ctx, frame, step, kind, len(st["attempts"]) + 1, checked=checked, **why)


def _evidence(ctx: RunContext, frame: Frame, step: AnyStep, kind: str, attempt: int, **extra: Any) -> None:
    """One piece of evidence for the step's lane (folded in by the service)."""
    assert ctx.lanes is not None
    lane = _lane(frame, step)
    spec_digest, config_digest = _digests(ctx, frame, step, lane)
    ctx.lanes.evidence.append({
        "kind": kind,
        "lane": lane.key,
        "runId": ctx.run["id"],
        "stepId": frame.prefix + step.id,
        "attempt": attempt,
        "specDigest": spec_digest,
        "configDigest": config_digest,
        "at": ctx.clock(),
        **extra,
    })


def _has_lane(step: AnyStep) -> bool:
    if isinstance(step, EvaluateStep):
        return True
    return isinstance(step, DoStep) and any(isinstance(e, JudgedEnsure) for e in step.ensure or [])


def skip_evaluate(ctx: RunContext, frame: Frame, step: EvaluateStep, st: dict[str, Any]) -> bool:
    """Decide whether an evaluate step's command runs; True when it is skipped (the
    step is then `skipped`, like a step whose `when` is false)."""
    if ctx.lanes is None:
        return False
    _, decision = _decide(ctx, frame, step, st)
    path = frame.prefix + step.id
    if not decision.verify and _output_read(frame, step.id):
        ctx.emit("verified", path, check="evaluate", reason="its output is read later: never skipped",
                 **decision.evidence)
        return False
    if decision.verify:
        ctx.emit("verified", path, check="evaluate", reason=decision.reason, **decision.evidence)
        return False
    record(ctx, frame, step, st, None, skipped=True)
    st["status"] = "skipped"
    ctx.emit("skipped", path, check="evaluate", reason=decision.reason, **decision.evidence)
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


def override(ctx: RunContext, frame: Frame, gate: GateStep, decision: str, by: str) -> None:
    """A gate sent the flow back or killed it: the lanes whose outputs led to it passed
    their checks and were overruled, so each resets."""
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
    for step in frame.flow.typed_steps:
        st = frame.steps[step.id]
        if step.id in above and _has_lane(step) and st["status"] == "succeeded":
            reason = f"gate {gate.id} {decision} by {by}"
            _evidence(ctx, frame, step, "override", len(st["attempts"]), reason=reason)
