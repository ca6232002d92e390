"""Iterate and carry: what a run keeps from one round to the next.

A `do` step with `iterate` runs again (up to `max`) until its `until` holds of its
output. A root flow's `carry` variables start from their `initial` template once its
source is there (again when that source step runs in a new epoch) and are rewritten by
a gate's `on_revise` template when that gate sends the flow round again; each write
records its provenance.
"""

from __future__ import annotations

from typing import Any

from strato.flow.refs import RefSyntaxError, Unresolved, parse_template, render
from strato.flow.spec import DoStep, GateStep
from strato.runs.engine.checks import until_holds
from strato.runs.engine.context import Frame, RunContext
from strato.runs.engine.outcomes import fail_scope, fail_step


def iterate_again(
    ctx: RunContext,
    frame: Frame,
    step: DoStep,
    st: dict[str, Any],
    output: Any,
    bindings: dict[str, Any],
    extra: dict[str, Any],
) -> bool:
    """An accepted result whose `until` does not hold yet: record it as a failed
    iteration (retried while under `max`); True if it was one."""
    if step.iterate is None:
        return False
    miss = until_holds(step.iterate.until, output, bindings, ctx.root)
    if miss is None:
        return False
    st["iterations"] = st.get("iterations", 0) + 1
    more = st["iterations"] < step.iterate.max
    note = {"iterate": {"iteration": st["iterations"], "max": step.iterate.max}, **extra}
    fail_step(ctx, frame, step, st, miss, output, may_retry=more, extra=note)
    return True


def carry_sources(frame: Frame) -> frozenset[str]:
    """The steps of ``frame`` whose output a carry variable starts from."""
    refs = (parse_template(var.initial).full for var in (frame.flow.carry or {}).values())
    return frozenset(ref.name for ref in refs if ref is not None and ref.kind != "input")


def materialise_carry(ctx: RunContext, frame: Frame) -> None:
    """Write each carry variable whose `initial` source is there and not yet written
    from its current epoch."""
    for name, var in (frame.flow.carry or {}).items():
        ref = parse_template(var.initial).full
        if ref is None:
            continue
        have = ctx.run["carry"].get(name)
        if ref.kind == "input":
            if have is None:
                _write_carry(ctx, name, var.initial, frame, {"kind": "initial"})
            continue
        src = frame.steps.get(ref.name)
        if src is None or src["status"] != "succeeded":
            continue
        if have is None or have["provenance"].get("sourceEpoch") != src["epoch"]:
            prov = {"kind": "initial", "sourceStep": ref.name, "sourceEpoch": src["epoch"]}
            _write_carry(ctx, name, var.initial, frame, prov)


def carry_on_revise(ctx: RunContext, frame: Frame, gate: GateStep, round_: int, closure: set[str]) -> None:
    """A gate sent the flow round again: rewrite the carry variables it names, noting
    the epoch their source will have once `closure` is reset."""
    for name, var in (frame.flow.carry or {}).items():
        template = (var.on_revise or {}).get(gate.id)
        if template is None:
            continue
        source = parse_template(var.initial).full
        epoch = None
        if source is not None and source.kind == "step":
            epoch = frame.steps[source.name]["epoch"] + (1 if source.name in closure else 0)
        prov = {"kind": "revise", "gate": gate.id, "round": round_, "sourceEpoch": epoch}
        _write_carry(ctx, name, template, frame, prov)


def _write_carry(ctx: RunContext, name: str, template: str, frame: Frame, provenance: dict[str, Any]) -> None:
    try:
        value = render(template, ctx.scope_for(frame))
    except (Unresolved, RefSyntaxError) as exc:
        fail_scope(ctx, frame, {"attempt": 0, "reason": f"carry_initial_unresolved: {name}: {exc}"})
        return
    provenance["at"] = ctx.clock()
    ctx.run["carry"][name] = {"value": value, "provenance": provenance}
    ctx.emit("carry_updated", name=name, reason=provenance["kind"], provenance=provenance)
