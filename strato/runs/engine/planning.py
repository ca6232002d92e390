"""Planning: a new run of a spec's entry flow, and what the engine derives once per flow
(each step's dependencies, who may route to whom, which steps feed the flow output).

Dependencies are read from the spec itself (declared ones and the step references in
any step text), so a run never stores them: they follow the frozen spec.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from strato.flow.graph import StepGraph
from strato.flow.leaves import step_leaves
from strato.flow.refs import RefSyntaxError, parse_template
from strato.flow.spec import AnyStep, DoStep, FanoutStep, Flow, GateStep, RunStep, Spec
from strato.flow.validate import check_entry_input
from strato.runs.engine.state import Refused, new_scope, now_iso


def revision_digest(spec: Spec) -> str:
    canonical = json.dumps(spec.model_dump(mode="json", by_alias=True), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def plan(spec: Spec, inputs: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """A new run of the entry flow; `Refused("INPUT_CONTRACT_INVALID")` on bad input."""
    flow = spec.flow(spec.entry)
    assert flow is not None  # validation guarantees the entry exists
    errors = check_entry_input(spec, inputs)
    if errors:
        raise Refused("INPUT_CONTRACT_INVALID", f"{errors[0].path}: {errors[0].message}")
    return {
        "id": run_id or str(uuid.uuid4()),
        "flow": spec.entry,
        "status": "running",
        "input": inputs,
        "revisionDigest": revision_digest(spec),
        "scope": new_scope(spec.entry, flow, inputs),
        "flowSpent": {},
        "carry": {},
        "createdAt": now_iso(),
    }


@dataclass
class FlowInfo:
    """What the engine derives once per flow: dependencies and routing."""

    deps: dict[str, list[str]]
    routers: dict[str, list[str]]  # routing target -> steps that may route to it
    on_fail_targets: set[str]
    graph: StepGraph
    output_sources: set[str]  # steps whose output `output.from` reads
    steps: dict[str, AnyStep]  # by id
    order: dict[str, int]  # id -> position in the flow
    # id -> the steps whose start its status decides (its dependents, what it routes to)
    dependents: dict[str, list[str]]
    digests: dict[Any, str] = field(default_factory=dict)  # contract digests, by (step, stage)


def flow_info(flow: Flow) -> FlowInfo:
    ids = [s.id for s in flow.typed_steps]
    graph = StepGraph(ids)
    deps: dict[str, list[str]] = {}
    routers: dict[str, list[str]] = {}
    on_fail: set[str] = set()
    for step in flow.typed_steps:
        found = list(step.deps_declared)
        for leaf in step_leaves(step, ""):
            if leaf.expression:
                continue
            try:
                refs = parse_template(leaf.text).refs
            except RefSyntaxError:
                continue
            found += [r.name for r in refs if r.kind == "step" and r.name in ids]
        deps[step.id] = list(dict.fromkeys(found))
        for dep in deps[step.id]:
            graph.add(dep, step.id, "dep")
        routes = _routes(step)
        for target, kind in routes:
            routers.setdefault(target, []).append(step.id)
            if kind == "on_fail":
                on_fail.add(target)
            graph.add(step.id, target, "route")
    try:
        sources = {r.name for r in parse_template(flow.output.from_).refs if r.kind == "step"}
    except RefSyntaxError:  # validation refuses this; no early check then
        sources = set()
    dependents: dict[str, list[str]] = {}
    for sid, found in deps.items():
        for dep in found:
            dependents.setdefault(dep, []).append(sid)
    for target, by in routers.items():
        for router in by:
            dependents.setdefault(router, []).append(target)
    by_id = {s.id: s for s in flow.typed_steps}
    order = {sid: i for i, sid in enumerate(ids)}
    return FlowInfo(deps, routers, on_fail, graph, sources, by_id, order, dependents)


def _routes(step: AnyStep) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(step, DoStep | FanoutStep | RunStep) and step.on_fail:
        out.append((step.on_fail, "on_fail"))
    if isinstance(step, GateStep):
        out += [(t, k) for k, t in (("approve", step.gate.on_approve), ("kill", step.gate.on_kill)) if t]
    return out
