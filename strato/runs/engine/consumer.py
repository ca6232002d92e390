"""Fanouts with `dispatch: consumer`: the engine never calls an agent. Up to
`concurrency` items are ready at a time, each with its own dispatch token, handed out
by `next` as `<step>/<index>` and reported back through `done` like any step. Each
result is checked against its stage's `out` and ensures (with `${item}` and `${prev}`),
retried per the stage's attempts, and moves the item to its next stage. When every
item has finished, `require` settles the step. The consumer owns any worktrees: the
engine merges nothing (the validator demands a gate after a consumer worktree fanout)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strato.flow.expr.errors import ExprError
from strato.flow.expr.evaluator import evaluate
from strato.flow.expr.values import deep_equal
from strato.flow.refs import RefSyntaxError, Scope, Unresolved, render_task
from strato.flow.spec import FanoutStep, Stage
from strato.runs.engine import dispatches, verification
from strato.runs.engine.budgets import overspent, reserve, task_ledgers
from strato.runs.engine.checks import DEFAULT_ATTEMPTS, check
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.outcomes import conclude_fanout

LIVE = ("pending", "ready")


def require_failure(step: FanoutStep, items: list[dict[str, Any]]) -> str | None:
    """Why the finished items do not meet `require` (None: they do)."""
    need = {"all": len(items), "any": 1}.get(str(step.fanout.require), step.fanout.require)
    ok = sum(it["status"] == "succeeded" for it in items)
    if ok >= int(need):
        return None
    return f"fanout require {step.fanout.require} not met ({ok}/{len(items)} succeeded)"


def item_scope(ctx: RunContext, frame: Frame, it: dict[str, Any]) -> tuple[Scope, dict[str, Any]]:
    base = ctx.scope_for(frame)
    scope = Scope(base.input, base.outputs, base.carry, it["item"], it.get("prev"), True)
    return scope, {"input": base.input, "item": it["item"], "prev": it.get("prev")}


def promote(ctx: RunContext, frame: Frame, step: FanoutStep, st: dict[str, Any]) -> None:
    """Make pending items ready up to `concurrency`; settle the step once all are done."""
    items = st["fanout"]["items"]
    for it in items:
        if st["status"] != "running" or ctx.run["status"] != "running":
            return
        busy = sum(i["status"] == "ready" for i in items)
        if it["status"] == "pending" and busy < step.fanout.concurrency:
            _start_stage(ctx, frame, step, st, it)
    if st["status"] == "running" and not any(it["status"] in LIVE for it in items):
        conclude_fanout(ctx, frame, step, st, require_failure(step, items))


def _start_stage(
    ctx: RunContext, frame: Frame, step: FanoutStep, st: dict[str, Any], it: dict[str, Any]
) -> None:
    path = f"{frame.prefix}{step.id}/{it['index']}"
    stages = step.fanout.steps
    while True:
        stage = stages[it["stage"]]
        scope, bindings = item_scope(ctx, frame, it)
        if stage.when is None or stage_when(stage.when, scope, bindings, ctx.root):
            break
        if it["stage"] == len(stages) - 1:
            it["status"] = "skipped"
            ctx.emit("fanout_item_skipped", path, stage=it["stage"])
            return
        it["stage"] += 1
    try:
        prompt = render_task(stage.do, scope)
    except (Unresolved, RefSyntaxError) as exc:
        _item_failed(ctx, step, it, path, f"stage {it['stage']}: render failed: {exc}")
        return
    if not reserve(ctx, frame, step, st, task_ledgers(frame, step, st), dict(dispatches.RESERVED)):
        return
    attempt = len(_stage_attempts(it)) + 1
    it.update(status="ready", prompt=prompt)
    record = {
        "stepId": frame.prefix + step.id,
        "attempt": attempt,
        "epoch": st["epoch"],
        "item": {"itemIndex": it["index"], "stage": it["stage"]},
    }
    contract = dispatches.contract_digest(ctx.spec, step, it["stage"], ctx.info(frame.name).digests)
    inputs = dispatches.inputs_digest(prompt, it["item"], it.get("prev"))
    dispatches.issue(ctx, record, contract, inputs, it)
    ctx.emit("fanout_item_ready", path, stage=it["stage"], attempt=attempt)
    dispatches.handed_out(ctx, path, it["stage"], attempt)


def stage_when(expr: str, scope: Scope, bindings: dict[str, Any], root: Path | None) -> bool:
    """A fanout stage's `when`: only exactly `true` runs it (errors read as false)."""
    try:
        return evaluate(expr, {**bindings, "result": scope.outputs}, root) is True
    except ExprError:
        return False


def _stage_attempts(it: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in it["attempts"] if a["stage"] == it["stage"]]


def descriptor(ctx: RunContext, frame: Frame, step: FanoutStep, it: dict[str, Any]) -> dict[str, Any]:
    stage = step.fanout.steps[it["stage"]]
    entry: dict[str, Any] = {
        "id": f"{frame.prefix}{step.id}/{it['index']}",
        "do": it["prompt"],
        "agent": stage.agent,
        "attempt": len(_stage_attempts(it)) + 1,
        "epoch": frame.steps[step.id]["epoch"],
        "dispatchToken": it["dispatchToken"],
        "out": stage.out,
        "step": frame.prefix + step.id,
        "stage": it["stage"],
        "isFinalStage": it["stage"] == len(step.fanout.steps) - 1,
        "itemIndex": it["index"],
        "item": it["item"],
        "policy": {"isolation": step.fanout.isolation, "pre_merge": step.fanout.pre_merge or []},
    }
    if stage.out:
        entry["contract"] = dict(ctx.spec.contracts.get(stage.out, {}))
    if "previousFailure" in it:
        entry["previousFailure"] = it["previousFailure"]
    return {**entry, **dispatches.handout(it)}


def item_done(
    ctx: RunContext,
    frame: Frame,
    step: FanoutStep,
    st: dict[str, Any],
    it: dict[str, Any],
    result: dict[str, Any],
    taken: dispatches.Accepted,
) -> None:
    """Settle one item's result for its current stage (the token is already checked)."""
    path = f"{frame.prefix}{step.id}/{it['index']}"
    usage = taken.usage
    it.pop("dispatchToken", None)
    it.pop("prompt", None)
    books = task_ledgers(frame, step, st)
    taken.settle(ctx, books)
    if overspent(ctx, frame, step, st, books):
        it["status"] = "failed"
        return
    stage = step.fanout.steps[it["stage"]]
    output = result.get("output")
    reason = None
    attempt = len(_stage_attempts(it)) + 1
    if "dispatches" in usage:
        reason = "dispatches are engine-accounted"
    elif result.get("failure") is not None:
        reason = f"agent reported failure: {result['failure']}"
        verification.record_stage(ctx, frame, step, it, attempt, reason)
    else:
        scope, bindings = item_scope(ctx, frame, it)
        skip = verification.stage_judged_to_skip(ctx, frame, step, it, attempt)
        verdict = check(ctx.spec, stage.out, stage.ensure, output, bindings, scope, ctx.root, ctx.judge, skip)
        for judged in verdict.judged:
            ctx.emit("judged", path, **judged)
        reason = verdict.reason
        verification.record_stage(ctx, frame, step, it, attempt, reason, skip)
    _record(ctx, step, stage, it, path, output, reason, taken.extra())


def _record(
    ctx: RunContext,
    step: FanoutStep,
    stage: Stage,
    it: dict[str, Any],
    path: str,
    output: Any,
    reason: str | None,
    extra: dict[str, Any],
) -> None:
    tried = _stage_attempts(it)
    attempt = {"stage": it["stage"], "attempt": len(tried) + 1, "at": ctx.clock(), "result": output, **extra}
    ctx.emit("fanout_attempt_result", path, stage=it["stage"], success=reason is None, reason=reason)
    if reason is None:
        it["attempts"].append(attempt)
        it.pop("previousFailure", None)
        if it["stage"] == len(step.fanout.steps) - 1:
            it.update(status="succeeded", output=output)
        else:
            it.update(status="pending", stage=it["stage"] + 1, prev=output)
        return
    identical = output is not None and bool(tried) and deep_equal(tried[-1].get("result"), output)
    if identical:
        reason += " (no retry: identical evidence)"
    it["attempts"].append({**attempt, "failure": reason})
    limit = stage.attempts or step.attempts or DEFAULT_ATTEMPTS
    if not identical and attempt["attempt"] < limit:
        it.update(status="pending", previousFailure={"attempt": attempt["attempt"], "reason": reason})
        return
    _item_failed(ctx, step, it, path, f"stage {it['stage']}: {reason}")


def _item_failed(ctx: RunContext, step: FanoutStep, it: dict[str, Any], path: str, reason: str) -> None:
    it.update(status="failed", failure=reason)
    it.pop("previousFailure", None)
    ctx.emit("fanout_item_done", path, index=it["index"], status="failed", failure=reason)
