"""Validation stages 2-11 (and our stage 12): semantic rules over a structurally valid
spec, in the reference's order. The first error wins, so each stage raises `FirstError`.
Stages 4-10 look at one flow at a time and live in `flowcheck.py`."""

from __future__ import annotations

from strato.flow import types as ty
from strato.flow.errors import FirstError, SpecError, fail
from strato.flow.expr.ast import parse
from strato.flow.expr.errors import ExprError
from strato.flow.flowcheck import FlowCheck
from strato.flow.graph import closing_edge
from strato.flow.leaves import step_leaves
from strato.flow.spec import FanoutStep, RunStep, Spec


def semantic_error(spec: Spec) -> SpecError | None:
    """The first semantic error of a structurally valid spec, or None."""
    try:
        _contracts(spec)
        _entry_and_subflows(spec)
        for name, flow in spec.flow_map.items():
            FlowCheck(spec, name, flow).run()
        _global(spec)
        _expressions(spec)
    except FirstError as found:
        return found.error
    return None


# --- stage 2: contracts


def _contracts(spec: Spec) -> None:
    parsed: dict[tuple[str, str], ty.TypeExpr] = {}
    for name, fields in spec.contracts.items():
        for field, text in fields.items():
            t = ty.parse_type(text)
            if t is None:
                fail(
                    "CONTRACT_INVALID_TYPE", f"contracts.{name}.{field}", f"invalid type {text!r}"
                )
            parsed[name, field] = t
    for (name, field), t in parsed.items():
        for ref in ty.named_refs(t):
            if ref not in spec.contracts:
                fail(
                    "CONTRACT_UNKNOWN_REF", f"contracts.{name}.{field}", f"unknown contract {ref!r}"
                )
    closing = closing_edge(
        spec.contracts,
        lambda name: [
            (ref, f"contracts.{name}.{field}")
            for field in spec.contracts[name]
            for ref in ty.named_refs(parsed[name, field])
        ],
    )
    if closing is not None:
        name, back, path = closing
        fail("CONTRACT_RECURSIVE_REF", path, f"{name!r} -> {back!r} closes a cycle of contracts")


# --- stage 3: entry and subflow preflight


def _entry_and_subflows(spec: Spec) -> None:
    flows = spec.flow_map
    if spec.entry not in flows:
        fail("FLOW_UNKNOWN_ENTRY", "flows.entry", f"entry flow {spec.entry!r} is not defined")
    for name, flow in flows.items():
        for i, step in enumerate(flow.typed_steps):
            if not isinstance(step, RunStep):
                continue
            path = f"flows.{name}.steps[{i}]"
            callee = flows.get(step.run)
            if callee is None:
                fail("SUBFLOW_UNKNOWN", f"{path}.run", f"flow {step.run!r} is not defined")
            if set(step.with_) != set(callee.input):
                fail(
                    "SUBFLOW_WITH_MISMATCH",
                    f"{path}.with",
                    f"with keys {sorted(step.with_)} must equal {step.run}'s input keys "
                    f"{sorted(callee.input)}",
                )


# --- stage 11: global subflow rules


def _global(spec: Spec) -> None:
    flows = spec.flow_map
    roots = [spec.entry, *(name for name in flows if name != spec.entry)]
    closing = closing_edge(
        roots,
        lambda name: [
            (step.run, f"flows.{name}.steps[{i}].run")
            for i, step in enumerate(flows[name].typed_steps)
            if isinstance(step, RunStep)
        ],
    )
    if closing is not None:
        name, back, path = closing
        fail("SUBFLOW_RECURSIVE", path, f"the call from {name!r} to {back!r} closes a cycle")
    for name, flow in flows.items():
        if name == spec.entry:
            continue
        for i, step in enumerate(flow.typed_steps):
            if isinstance(step, FanoutStep | RunStep):
                fail(
                    "SUBFLOW_BODY_RESTRICTED",
                    f"flows.{name}.steps[{i}].{step.kind}",
                    f"non-entry flow {name!r} may not contain {step.kind}",
                )


# --- stage 12 (ours): expressions parse


def _expressions(spec: Spec) -> None:
    """Expression fields must parse; Stratum only finds this out at run time."""
    for name, flow in spec.flow_map.items():
        for i, step in enumerate(flow.typed_steps):
            for leaf in step_leaves(step, f"flows.{name}.steps[{i}]"):
                if leaf.expression:
                    try:
                        parse(leaf.text)
                    except ExprError as exc:
                        fail("EXPR_INVALID", leaf.path, str(exc))
