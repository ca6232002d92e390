"""Validation stages 4-10 for one flow: declarations, routing edges, references and their
types, the consumer worktree, carry, revise gates and the flow's output, in the reference's
order. Run by `semantics.semantic_error`; the first error raises `FirstError`."""

from __future__ import annotations

import re
from typing import NoReturn

from strato.flow import types as ty
from strato.flow.errors import fail
from strato.flow.graph import EdgeKind, StepGraph
from strato.flow.leaves import Leaf, step_leaves
from strato.flow.refs import Ref, RefSyntaxError, parse_template
from strato.flow.spec import (
    AnyStep,
    DoStep,
    EvaluateStep,
    FanoutStep,
    FileContainsEnsure,
    FileExistsEnsure,
    Flow,
    GateStep,
    RunStep,
    SetStep,
    Spec,
)

_FILE_CALL = re.compile(r"\bfile_(exists|contains)\s*\(")


def _check_field_type(code_path: str, text: str, spec: Spec) -> None:
    """Input field types: parse, then named references must exist."""
    t = ty.parse_type(text)
    if t is None:
        fail("CONTRACT_INVALID_TYPE", code_path, f"invalid type {text!r}")
    for ref in ty.named_refs(t):
        if ref not in spec.contracts:
            fail("CONTRACT_UNKNOWN_REF", code_path, f"unknown contract {ref!r}")


class FlowCheck:
    def __init__(self, spec: Spec, name: str, flow: Flow) -> None:
        self.spec = spec
        self.name = name
        self.flow = flow
        self.steps = flow.typed_steps
        self.ids = {s.id: s for s in self.steps}
        self.index = {s.id: i for i, s in enumerate(self.steps)}
        self.carry = (flow.carry or {}) if name == spec.entry else {}
        self.graph = StepGraph([s.id for s in self.steps])
        self.routed: set[str] = set()  # targets of on_fail / on_approve / on_kill
        # (reader step, leaf path, ref) for carry refs in rendered fields
        self.carry_reads: list[tuple[str, str, Ref]] = []

    def path(self, i: int) -> str:
        return f"flows.{self.name}.steps[{i}]"

    def run(self) -> None:
        self.declarations()
        self.edges()
        self.references()
        if self.name == self.spec.entry:
            self.consumer_worktree()
        self.carry_rules()
        self.revise_gates()
        self.output_from()

    # stage 4
    def declarations(self) -> None:
        base = f"flows.{self.name}"
        if self.flow.output.contract not in self.spec.contracts:
            fail(
                "CONTRACT_UNKNOWN_REF",
                f"{base}.output.contract",
                f"unknown contract {self.flow.output.contract!r}",
            )
        for field, text in self.flow.input.items():
            _check_field_type(f"{base}.input.{field}", text, self.spec)
        seen: set[str] = set()
        for i, step in enumerate(self.steps):
            if step.id in seen:
                fail("STEP_DUPLICATE_ID", f"{self.path(i)}.id", f"duplicate step id {step.id!r}")
            seen.add(step.id)
        for i, step in enumerate(self.steps):
            outs = [(f"{self.path(i)}.out", getattr(step, "out", None))]
            if isinstance(step, FanoutStep):
                outs += [
                    (f"{self.path(i)}.fanout.steps[{j}].out", st.out)
                    for j, st in enumerate(step.fanout.steps)
                ]
            for where, out in outs:
                if out is not None and out not in self.spec.contracts:
                    fail("CONTRACT_UNKNOWN_REF", where, f"unknown contract {out!r}")

    # stage 5
    def add_edge(self, src: str, dst: str, path: str, what: str, kind: EdgeKind = "route") -> None:
        for end in (src, dst):
            if end not in self.ids:
                fail("ROUTING_UNKNOWN_TARGET", path, f"{what} names unknown step {end!r}")
        if src == dst:
            fail("ROUTING_SELF_TARGET", path, f"step {src!r} cannot {what} itself")
        if not self.graph.add(src, dst, kind):
            fail("ROUTING_CYCLE", path, f"edge {src} -> {dst} closes a cycle")

    def edges(self) -> None:
        for i, step in enumerate(self.steps):
            for j, dep in enumerate(step.after or []):
                self.add_edge(dep, step.id, f"{self.path(i)}.after[{j}]", "depend on", "dep")
            on_fail = getattr(step, "on_fail", None)
            if on_fail is not None:
                self.add_edge(step.id, on_fail, f"{self.path(i)}.on_fail", "route on failure to")
                self.routed.add(on_fail)
            for leaf in step_leaves(step, self.path(i)):
                refs = _refs_or_none(leaf.text)
                for ref in refs:
                    self.check_path(ref, leaf.path)
                for ref in refs:
                    if ref.kind == "step" and ref.name in self.ids:
                        self.add_edge(ref.name, step.id, leaf.path, "reference", "dep")
            if isinstance(step, GateStep):
                for key in ("on_approve", "on_kill"):
                    target = getattr(step.gate, key)
                    if target is not None:
                        self.add_edge(step.id, target, f"{self.path(i)}.gate.{key}", "route to")
                        self.routed.add(target)
            if isinstance(step, FanoutStep):
                over = _refs_or_none(step.fanout.over, full=True)
                if not over:
                    fail(
                        "FANOUT_OVER_SINGLE_REF",
                        f"{self.path(i)}.fanout.over",
                        "fanout.over must be exactly one ${...} reference",
                    )

    # stage 6
    def references(self) -> None:
        for i, step in enumerate(self.steps):
            for leaf in step_leaves(step, self.path(i)):
                self.check_leaf(step, leaf)

    def check_leaf(self, step: AnyStep, leaf: Leaf) -> None:
        try:
            template = parse_template(leaf.text)
        except RefSyntaxError as exc:
            fail("REF_INVALID", leaf.path, str(exc))
        for ref in template.refs:
            if ref.kind in ("item", "prev") and not leaf.in_stage:
                fail(
                    "REF_INVALID_SCOPE",
                    leaf.path,
                    f"${{{ref.source}}} is only available inside fanout stages",
                )
            if ref.kind == "carry":
                if leaf.expression:
                    fail(
                        "CARRY_REF_IN_EXPRESSION",
                        leaf.path,
                        f"${{{ref.source}}}: carry values are not expression bindings",
                    )
                self.carry_reads.append((step.id, leaf.path, ref))
            elif ref.kind in ("input", "step"):
                self.check_ref(ref, leaf.path)

    def check_ref(self, ref: Ref, path: str) -> ty.PathType:
        """Type a step or input reference; fails with the reference's code."""
        if ref.kind == "input":
            return self.walk_ref(ref, path, self.input_type(ref))
        step = self.ids.get(ref.name)
        if step is None:
            if ref.name in self.carry:
                fail(
                    "CARRY_PATH_RESERVED",
                    path,
                    f"${{{ref.source}}}: a carry path may not start with .output",
                )
            fail("REF_UNKNOWN_STEP", path, f"${{{ref.source}}} names unknown step {ref.name!r}")
        return self.walk_ref(ref, path, self.output_type(step, path))

    def check_path(self, ref: Ref, path: str) -> None:
        """`REF_UNKNOWN_PATH` for a reference whose root is typed, and nothing else: the
        reference's other rules are stage 6's, but its path is checked before the edge
        that the same reference adds to the step graph."""
        step = self.ids.get(ref.name)
        if ref.kind == "input":
            self.walk_ref(ref, path, self.input_type(ref))
        elif ref.kind == "step" and step is not None:
            root = self.declared_output(step)
            if root is not None:
                self.walk_ref(ref, path, root)

    def input_type(self, ref: Ref) -> ty.TypeExpr | None:
        field = ref.path[0]
        text = self.flow.input.get(field) if isinstance(field, str) else None
        return None if text is None else ty.parse_type(text)

    def walk_ref(self, ref: Ref, path: str, root: ty.TypeExpr | None) -> ty.PathType:
        rest = ref.path[1:] if ref.kind == "input" else ref.path
        reached = None if root is None else ty.walk(root, rest, self.spec.contracts)
        if reached is None:
            what = "the flow input" if ref.kind == "input" else f"{ref.name}'s output"
            fail("REF_UNKNOWN_PATH", path, f"${{{ref.source}}} does not match {what}")
        return reached

    def declared_output(self, step: AnyStep) -> ty.TypeExpr | None:
        """The type of a step's output, None when the step declares none."""
        if isinstance(step, FanoutStep):
            final = step.fanout.steps[-1].out
            return None if final is None else ty.ArrayOf(ty.Named(final))
        if isinstance(step, RunStep):
            callee = self.spec.flow(step.run)
            assert callee is not None  # stage 3 checked it
            return ty.Named(callee.output.contract)
        out = step.out if isinstance(step, DoStep | SetStep | EvaluateStep) else None
        return None if out is None else ty.Named(out)

    def output_type(self, step: AnyStep, path: str) -> ty.TypeExpr:
        """The type of a referenced step's output; a step without one is an error at the
        key that should declare it (a fanout's final stage `out`), or where it is used."""
        declared = self.declared_output(step)
        if declared is not None:
            return declared
        if isinstance(step, FanoutStep):
            last = len(step.fanout.steps) - 1
            fail(
                "FANOUT_OUTPUT_REQUIRES_FINAL_OUT",
                f"{self.path(self.index[step.id])}.fanout.steps[{last}].out",
                f"fanout {step.id!r} output is referenced but its final stage has no out",
            )
        fail(
            "REF_OUTPUT_CONTRACT_REQUIRED",
            path,
            f"step {step.id!r} output is referenced but it declares no out contract",
        )

    # stage 7
    def consumer_worktree(self) -> None:
        for i, step in enumerate(self.steps):
            if not (
                isinstance(step, FanoutStep)
                and step.fanout.dispatch == "consumer"
                and step.fanout.isolation == "worktree"
            ):
                continue
            for leaf in step_leaves(step, self.path(i)):
                if leaf.in_stage and leaf.expression and _FILE_CALL.search(leaf.text):
                    self.no_files(leaf.path)
            for j, stage in enumerate(step.fanout.steps):
                for k, item in enumerate(stage.ensure or []):
                    if isinstance(item, FileExistsEnsure | FileContainsEnsure):
                        self.no_files(f"{self.path(i)}.fanout.steps[{j}].ensure[{k}]")
            if not any(
                isinstance(g, GateStep)
                and g.when is None
                and g.id not in self.routed
                and step.id in self.graph.dependencies(g.id)
                for g in self.steps
            ):
                fail(
                    "CONSUMER_WORKTREE_GATE_REQUIRED",
                    f"{self.path(i)}.fanout",
                    "a consumer worktree fanout needs a direct, unconditional successor gate",
                )

    @staticmethod
    def no_files(path: str) -> NoReturn:
        fail(
            "CONSUMER_WORKTREE_FILESYSTEM_UNSUPPORTED",
            path,
            "file predicates cannot run on a consumer's worktree",
        )

    # stage 8
    def carry_rules(self) -> None:
        base = f"flows.{self.name}.carry"
        if self.flow.carry is not None and self.name != self.spec.entry:
            fail("CARRY_ROOT_ONLY", base, "only the entry flow may declare carry")
        sources: dict[str, Ref] = {}
        for var in self.carry:
            if var in ("item", "prev", "input") or var in self.ids:
                fail("CARRY_NAME_CONFLICT", f"{base}.{var}", f"carry name {var!r} is taken")
        for var, decl in self.carry.items():
            sources[var] = self.carry_source(decl.initial, f"{base}.{var}.initial")
            for gate, text in (decl.on_revise or {}).items():
                self.carry_source(text, f"{base}.{var}.on_revise.{gate}")
        for var, ref in sources.items():
            src = self.ids.get(ref.name) if ref.kind == "step" else None
            if src is not None and (
                src.when is not None or isinstance(src, GateStep) or src.id in self.routed
            ):
                fail(
                    "CARRY_INITIAL_SOURCE_CONDITIONAL",
                    f"{base}.{var}.initial",
                    f"initial source {src.id!r} may not be conditional, a gate or a route target",
                )
        for _, path, ref in self.carry_reads:
            if ref.name not in self.carry:
                fail("REF_UNKNOWN_CARRY", path, f"${{{ref.source}}}: no carry named {ref.name!r}")
        for reader, path, ref in self.carry_reads:
            src_ref = sources[ref.name]
            if src_ref.kind == "step" and reader not in self.graph.closure(src_ref.name, ("dep",)):
                fail(
                    "CARRY_REF_BEFORE_INITIAL",
                    path,
                    f"step {reader!r} reads {ref.name!r} but does not come after {src_ref.name!r}",
                )
        self.carry_gates(base)

    def carry_source(self, text: str, path: str) -> Ref:
        ref = _refs_or_none(text, full=True)
        if not ref or ref[0].kind not in ("step", "input"):
            fail("CARRY_REF_INVALID", path, "must be exactly one ${step.output...} or ${input...}")
        self.check_ref(ref[0], path)
        return ref[0]

    def carry_gates(self, base: str) -> None:
        revising = [
            (var, gate) for var, decl in self.carry.items() for gate in decl.on_revise or {}
        ]
        for var, gate in revising:
            if not isinstance(self.ids.get(gate), GateStep):
                fail(
                    "CARRY_UNKNOWN_GATE",
                    f"{base}.{var}.on_revise.{gate}",
                    f"{gate!r} is not a gate step",
                )
        targets: dict[str, str] = {}  # each revising gate's on_revise, once known to be set
        for var, gate in revising:
            gate_step = self.ids[gate]
            assert isinstance(gate_step, GateStep)
            if gate_step.gate.on_revise is not None:
                targets[gate] = gate_step.gate.on_revise
            else:
                fail(
                    "CARRY_REVISE_TARGET_NULL",
                    f"{base}.{var}.on_revise.{gate}",
                    f"gate {gate!r} has no on_revise target",
                )
        readers = {
            var: [r for r, _, ref in self.carry_reads if ref.name == var] for var in self.carry
        }
        for var, gate in revising:
            target = targets[gate]
            reset = self.graph.closure(target) if target in self.ids else set()
            missed = [r for r in readers[var] if r not in reset]
            if missed:
                fail(
                    "CARRY_REVISE_MISSES_CONSUMER",
                    f"{base}.{var}.on_revise.{gate}",
                    f"revising to {target!r} does not reset reader {missed[0]!r}",
                )
        for var, gate in revising:
            early = [r for r in readers[var] if gate not in self.graph.closure(r, ("dep",))]
            if early:
                fail(
                    "CARRY_REVISE_GATE_NOT_AFTER_CONSUMER",
                    f"{base}.{var}.on_revise.{gate}",
                    f"gate {gate!r} does not depend on reader {early[0]!r}",
                )

    # stage 9
    def revise_gates(self) -> None:
        gates = [
            (i, s)
            for i, s in enumerate(self.steps)
            if isinstance(s, GateStep) and s.gate.on_revise is not None
        ]
        for i, _ in gates[:1]:
            if self.flow.max_rounds is None:
                fail(
                    "GATE_REVISE_REQUIRES_MAX_ROUNDS",
                    f"{self.path(i)}.gate.on_revise",
                    "a gate that can revise needs the flow's max_rounds",
                )
        for i, gate in gates:
            path, target = f"{self.path(i)}.gate.on_revise", gate.gate.on_revise
            assert target is not None
            if target not in self.ids:
                fail("ROUTING_UNKNOWN_TARGET", path, f"on_revise names unknown step {target!r}")
            if target == gate.id:
                fail("ROUTING_SELF_TARGET", path, "a gate cannot revise to itself")
            if not self.graph.reaches(target, gate.id):
                fail(
                    "GATE_REVISE_NOT_ANCESTOR",
                    path,
                    f"{target!r} is not an ancestor of {gate.id!r}",
                )

    # stage 10
    def output_from(self) -> None:
        path = f"flows.{self.name}.output.from"
        refs = _refs_or_none(self.flow.output.from_, full=True)
        if not refs or refs[0].kind != "step":
            fail(
                "REF_INVALID", path, "output.from must be exactly one ${step.output...} reference"
            )
        ref = refs[0]
        self.check_ref(ref, path)
        step = self.ids[ref.name]
        if isinstance(step, FanoutStep) and not (ref.path and isinstance(ref.path[0], int)):
            fail("REF_UNKNOWN_PATH", path, "a fanout output is an array: select an item, e.g. [0]")


def _refs_or_none(text: str, full: bool = False) -> list[Ref]:
    """References in a string, [] if it does not parse (or, with full, if it is not
    exactly one reference)."""
    try:
        template = parse_template(text)
    except RefSyntaxError:
        return []
    if full:
        return [template.full] if template.full is not None else []
    return template.refs
