"""Generated sweep over the validator: for every rule of the reference, hundreds of
variants (steps shifted by padding, other flow and contract names, flows declared in
another order) must yield the rule's code at a path computed here from the variant, never
from the validator. Mutated fixtures must obey the path rules of each code, and every
valid spec in the repository must still validate."""

from __future__ import annotations

import ast
import copy
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strato.flow.validate import load_spec, validate_data
from strato.flow.yamlload import load_yaml
from tests.support.spec_mutations import mutated_specs

REPO = Path(__file__).resolve().parents[3]
R = {"text": "string", "n": "number", "items": "string[]", "meta": "object"}
INPUT = {"topic": "string", "list": "string[]"}
WITH = {"topic": "x", "list": "${input.list}"}


@dataclass(frozen=True)
class Shape:
    """Where the rule's construct lands: after `pad` independent steps of an entry flow
    named `entry`, beside a subflow named `sub` declared before or after it."""

    pad: int
    entry: str
    sub: str
    sub_first: bool

    def steps(self) -> str:
        return f"flows.{self.entry}.steps"

    def padding(self) -> list[dict[str, Any]]:
        return [{"id": f"p{i}", "do": f"pad {i} ${{input.topic}}", "out": "R"} for i in range(self.pad)]


shapes = st.builds(
    Shape,
    pad=st.integers(0, 3),
    entry=st.sampled_from(["main", "build", "Release_2"]),
    sub=st.sampled_from(["sub", "helper", "z_last"]),
    sub_first=st.booleans(),
)


def flow(steps: list[dict[str, Any]], out: str = "${a.output}", **extra: Any) -> dict[str, Any]:
    return {"input": dict(INPUT), "output": {"from": out, "contract": "R"}, "steps": steps, **extra}


def a_step(**extra: Any) -> dict[str, Any]:
    return {"id": "a", "do": "work on ${input.topic}", "out": "R", **extra}


def spec(
    shape: Shape,
    steps: list[dict[str, Any]],
    entry_extra: dict[str, Any] | None = None,
    others: dict[str, Any] | None = None,
    contracts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The entry flow holds padding then `steps`; `others` are declared before or after
    it as the shape says."""
    main = flow([*shape.padding(), *steps], **(entry_extra or {}))
    named = {shape.entry: main}
    flows = {**(others or {}), **named} if shape.sub_first else {**named, **(others or {})}
    return {
        "version": 1,
        "contracts": {"R": dict(R), **(contracts or {})},
        "flows": {"entry": shape.entry, **flows},
    }


def subflow(extra_steps: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return flow(
        [{"id": "s", "do": "sub ${input.topic}", "out": "R"}, *(extra_steps or [])],
        out="${s.output}",
        **extra,
    )


def call(flow_name: str, sid: str = "r", **extra: Any) -> dict[str, Any]:
    return {"id": sid, "run": flow_name, "with": dict(WITH), **extra}


def fanout(fid: str, stages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body = {
        "over": "${input.list}",
        "steps": stages,
        "concurrency": 2,
        "isolation": "none",
        "require": "all",
        "merge": "sequential",
        **extra,
    }
    return {"id": fid, "fanout": body}


def gate(gid: str, after: list[str], revise: str | None = None) -> dict[str, Any]:
    return {
        "id": gid,
        "after": after,
        "gate": {"on_approve": None, "on_revise": revise, "on_kill": None},
    }


Case = tuple[dict[str, Any], str, str]
Rule = Callable[[Shape, st.DataObject], Case]


def carry_on_a_subflow(s: Shape, data: st.DataObject) -> Case:
    carry = data.draw(st.sampled_from([{}, {"w": {"initial": "${s.output}"}}]))
    called = data.draw(st.booleans())
    steps = [a_step(), *([call(s.sub, after=["a"])] if called else [])]
    doc = spec(s, steps, others={s.sub: subflow(carry=carry)})
    return doc, "CARRY_ROOT_ONLY", f"flows.{s.sub}.carry"


def unknown_path_before_routing(s: Shape, data: st.DataObject) -> Case:
    """A reference to its own step (a self edge) or to a later step that depends on it
    (a cycle), with a path the contract does not have."""
    bad = data.draw(
        st.sampled_from(
            ["${a.output.nope}", "${a.output.text.more}", "${a.output.items.x}", "${a.output[0]}"]
        )
    )
    i = s.pad
    where = data.draw(st.sampled_from(["self", "cycle"]))
    if where == "self":
        doc = spec(s, [a_step(do=f"again {bad}")])
        return doc, "REF_UNKNOWN_PATH", f"{s.steps()}[{i}].do"
    field = data.draw(st.sampled_from(["do", "evaluate.in", "stage do"]))
    if field == "do":
        reader: dict[str, Any] = {"id": "b", "do": f"use {bad}"}
        leaf = "do"
    elif field == "evaluate.in":
        reader = {"id": "b", "evaluate": {"command": "true", "in": {"x": bad}}}
        leaf = "evaluate.in.x"
    else:
        reader = fanout("b", [{"do": f"use {bad} ${{item}}", "out": "R"}])
        leaf = "fanout.steps[0].do"
    doc = spec(s, [a_step(after=["b"]), reader])
    return doc, "REF_UNKNOWN_PATH", f"{s.steps()}[{i + 1}].{leaf}"


def body_restricted(s: Shape, data: st.DataObject) -> Case:
    kind = data.draw(st.sampled_from(["fanout", "run"]))
    extra = data.draw(st.integers(0, 2))
    body = [{"id": f"q{k}", "after": ["s"], "do": "more", "out": "R"} for k in range(extra)]
    construct = (
        fanout("x", [{"do": "each ${item}", "out": "R"}]) if kind == "fanout" else call("leaf", sid="x")
    )
    others = {s.sub: subflow([*body, construct]), "leaf": subflow()}
    doc = spec(s, [a_step()], others=others)
    return doc, "SUBFLOW_BODY_RESTRICTED", f"flows.{s.sub}.steps[{1 + extra}].{kind}"


def fanout_final_out(s: Shape, data: st.DataObject) -> Case:
    stages = data.draw(st.integers(1, 3))
    body = [{"do": f"stage {k} ${{item}}", "out": "R"} for k in range(stages - 1)]
    body.append({"do": "last ${prev}"})
    reader = data.draw(st.sampled_from(["later step", "earlier step", "output.from"]))
    fan = fanout("f", body)
    if reader == "output.from":
        doc = spec(s, [a_step(), fan], entry_extra={"out": "${f.output[0]}"})
        at = s.pad + 1
    elif reader == "later step":
        doc = spec(s, [a_step(), fan, {"id": "b", "do": "x ${f.output[0].text}"}])
        at = s.pad + 1
    else:
        doc = spec(s, [a_step(), {"id": "b", "after": ["f"], "do": "x ${f.output[1]}"}, fan])
        at = s.pad + 2
    return doc, "FANOUT_OUTPUT_REQUIRES_FINAL_OUT", f"{s.steps()}[{at}].fanout.steps[{stages - 1}].out"


def contract_cycle(s: Shape, data: st.DataObject) -> Case:
    """Chain X1 -> ... -> Xn -> Xj, declared in a drawn order. The walk from the first
    declared chain contract Xi enters the cycle at X(max(i, j)); the reference into that
    contract from its cycle predecessor closes it."""
    n = data.draw(st.integers(1, 4))
    j = data.draw(st.integers(1, n))
    names = [f"X{k}" for k in range(1, n + 1)]
    order = data.draw(st.permutations(names))
    chain: dict[str, dict[str, str]] = {}
    for k in range(1, n + 1):
        fields = {"label": "string"}
        if k < n:
            fields["next"] = data.draw(st.sampled_from([f"X{k + 1}", f"X{k + 1}?", f"X{k + 1}[]"]))
        else:
            fields["back"] = f"X{j}?"
        chain[f"X{k}"] = fields
    contracts = {name: chain[name] for name in order}
    i = int(order[0][1:])
    enter = max(i, j)
    closing = f"X{n}.back" if enter == j else f"X{enter - 1}.next"
    return spec(s, [a_step()], contracts=contracts), "CONTRACT_RECURSIVE_REF", f"contracts.{closing}"


def subflow_cycle(s: Shape, data: st.DataObject) -> Case:
    """entry -> F1 -> ... -> Fn -> (Fj or entry): the walk from the entry flow closes the
    cycle at Fn's run, whatever order the flows are declared in."""
    n = data.draw(st.integers(0, 3))
    if n == 0:
        doc = spec(s, [a_step(), call(s.entry, after=["a"])])
        return doc, "SUBFLOW_RECURSIVE", f"{s.steps()}[{s.pad + 1}].run"
    back = data.draw(st.sampled_from([s.entry, *(f"f{k}" for k in range(1, n + 1))]))
    others = {f"f{k}": subflow([call(f"f{k + 1}" if k < n else back, after=["s"])]) for k in range(1, n + 1)}
    order = data.draw(st.permutations(list(others)))
    doc = spec(s, [a_step(), call("f1", after=["a"])], others={k: others[k] for k in order})
    return doc, "SUBFLOW_RECURSIVE", f"flows.f{n}.steps[1].run"


def routing(s: Shape, data: st.DataObject) -> Case:
    i = s.pad
    kind = data.draw(st.sampled_from(["unknown", "self", "cycle", "on_fail self"]))
    if kind == "unknown":
        doc = spec(s, [a_step(), {"id": "b", "after": ["a", "ghost"], "do": "x"}])
        return doc, "ROUTING_UNKNOWN_TARGET", f"{s.steps()}[{i + 1}].after[1]"
    if kind == "self":
        return spec(s, [a_step(after=["a"])]), "ROUTING_SELF_TARGET", f"{s.steps()}[{i}].after[0]"
    if kind == "on_fail self":
        return spec(s, [a_step(on_fail="a")]), "ROUTING_SELF_TARGET", f"{s.steps()}[{i}].on_fail"
    doc = spec(s, [a_step(after=["b"]), {"id": "b", "after": ["a"], "do": "x"}])
    return doc, "ROUTING_CYCLE", f"{s.steps()}[{i + 1}].after[0]"


def references(s: Shape, data: st.DataObject) -> Case:
    i = s.pad + 1
    text, code = data.draw(
        st.sampled_from(
            [
                ("x ${ghost.output}", "REF_UNKNOWN_STEP"),
                ("x ${item}", "REF_INVALID_SCOPE"),
                ("x ${input.nope}", "REF_UNKNOWN_PATH"),
                ("x ${input.topic.deeper}", "REF_UNKNOWN_PATH"),
                ("x ${", "REF_INVALID"),
                ("x ${Bad-ref}", "REF_INVALID"),
                ("x ${g.output}", "REF_OUTPUT_CONTRACT_REQUIRED"),
            ]
        )
    )
    doc = spec(s, [a_step(), {"id": "b", "after": ["a"], "do": text}, gate("g", ["a"])])
    if code == "REF_OUTPUT_CONTRACT_REQUIRED":
        doc["flows"][s.entry]["steps"][i]["after"] = ["g"]
    return doc, code, f"{s.steps()}[{i}].do"


def declarations(s: Shape, data: st.DataObject) -> Case:
    i = s.pad
    kind = data.draw(st.sampled_from(["dup", "out", "entry", "unknown run", "with"]))
    if kind == "dup":
        doc = spec(s, [a_step(), {"id": "a", "do": "again"}])
        return doc, "STEP_DUPLICATE_ID", f"{s.steps()}[{i + 1}].id"
    if kind == "out":
        return spec(s, [a_step(out="Nope")]), "CONTRACT_UNKNOWN_REF", f"{s.steps()}[{i}].out"
    if kind == "entry":
        doc = spec(s, [a_step()])
        doc["flows"]["entry"] = "nowhere"
        return doc, "FLOW_UNKNOWN_ENTRY", "flows.entry"
    if kind == "unknown run":
        return spec(s, [a_step(), call("nowhere")]), "SUBFLOW_UNKNOWN", f"{s.steps()}[{i + 1}].run"
    step = {**call(s.sub), "with": {"topic": "x"}}
    doc = spec(s, [a_step(), step], others={s.sub: subflow()})
    return doc, "SUBFLOW_WITH_MISMATCH", f"{s.steps()}[{i + 1}].with"


def gates_and_carry(s: Shape, data: st.DataObject) -> Case:
    i = s.pad
    kind = data.draw(st.sampled_from(["max_rounds", "consumer", "name", "in expression"]))
    if kind == "max_rounds":
        doc = spec(s, [a_step(), gate("g", ["a"], revise="a")])
        return doc, "GATE_REVISE_REQUIRES_MAX_ROUNDS", f"{s.steps()}[{i + 1}].gate.on_revise"
    if kind == "consumer":
        fan = fanout("f", [{"do": "x ${item}", "out": "R"}], dispatch="consumer", isolation="worktree")
        return spec(s, [a_step(), fan]), "CONSUMER_WORKTREE_GATE_REQUIRED", f"{s.steps()}[{i + 1}].fanout"
    if kind == "name":
        carry = {"a": {"initial": "${input.topic}"}}
        doc = spec(s, [a_step()], entry_extra={"carry": carry})
        return doc, "CARRY_NAME_CONFLICT", f"flows.{s.entry}.carry.a"
    carry = {"wave": {"initial": "${a.output.items}"}}
    reader = {"id": "b", "after": ["a"], "do": "x", "when": "${wave} == 1"}
    doc = spec(s, [a_step(), reader], entry_extra={"carry": carry})
    return doc, "CARRY_REF_IN_EXPRESSION", f"{s.steps()}[{i + 1}].when"


def structure(s: Shape, data: st.DataObject) -> Case:
    i = s.pad
    kind = data.draw(st.sampled_from(["unknown", "for kind", "mix"]))
    if kind == "unknown":
        key = data.draw(st.sampled_from(["intent", "next", "policy"]))
        return spec(s, [a_step(**{key: "x"})]), "E2_UNKNOWN_FIELD", f"{s.steps()}[{i}].{key}"
    if kind == "for kind":
        step = {"id": "a", "set": {"text": "'x'"}, "out": "R", "attempts": 2}
        return spec(s, [step]), "E2_FIELD_FOR_KIND", f"{s.steps()}[{i}].attempts"
    return spec(s, [a_step(set={"text": "'x'"})]), "E2_CONSTRUCT_MIX", f"{s.steps()}[{i}]"


RULES: list[Rule] = [
    carry_on_a_subflow,
    unknown_path_before_routing,
    body_restricted,
    fanout_final_out,
    contract_cycle,
    subflow_cycle,
    routing,
    references,
    declarations,
    gates_and_carry,
    structure,
]


@settings(max_examples=800, deadline=None)
@given(shape=shapes, rule=st.sampled_from(RULES), data=st.data())
def test_every_rule_variant_yields_its_code_at_its_path(
    shape: Shape, rule: Rule, data: st.DataObject
) -> None:
    doc, code, path = rule(shape, data)
    _, errors = validate_data(copy.deepcopy(doc))
    assert errors, f"{rule.__name__}: accepted"
    assert (errors[0].code, errors[0].path) == (code, path), errors


@settings(max_examples=100, deadline=None)
@given(shape=shapes)
def test_the_padded_base_and_its_subflows_validate(shape: Shape) -> None:
    carry = {"wave": {"initial": "${a.output.items}"}}
    reader = {"id": "b", "after": ["a"], "do": "x ${wave}", "out": "R"}
    doc = spec(
        shape,
        [a_step(), reader, call(shape.sub, after=["b"])],
        entry_extra={"carry": carry},
        others={shape.sub: subflow([gate("g", ["s"])])},
    )
    valid, errors = validate_data(doc)
    assert errors == []
    assert valid is not None and list(valid.flow_map)[0 if not shape.sub_first else 1] == shape.entry


# --- path rules for whatever a mutation produces

_SEGMENTS = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
# the construct a code is about, as the last key of its path
_LAST_KEY = {
    "SUBFLOW_BODY_RESTRICTED": r"\.steps\[\d+\]\.(fanout|run)",
    "SUBFLOW_RECURSIVE": r"\.steps\[\d+\]\.run",
    "SUBFLOW_UNKNOWN": r"\.steps\[\d+\]\.run",
    "SUBFLOW_WITH_MISMATCH": r"\.steps\[\d+\]\.with",
    "CARRY_ROOT_ONLY": r"^flows\.[^.]+\.carry",
    "FANOUT_OUTPUT_REQUIRES_FINAL_OUT": r"\.fanout\.steps\[\d+\]\.out",
    "CONSUMER_WORKTREE_GATE_REQUIRED": r"\.fanout",
    "GATE_REVISE_REQUIRES_MAX_ROUNDS": r"\.gate\.on_revise",
    "GATE_REVISE_NOT_ANCESTOR": r"\.gate\.on_revise",
    "STEP_DUPLICATE_ID": r"\.id",
    "FLOW_UNKNOWN_ENTRY": r"^flows\.entry",
    "CONTRACT_RECURSIVE_REF": r"^contracts\.[^.]+\.[^.]+",
}
# codes about a `${...}` string: the path holds that string
_AT_STRING = {
    "REF_INVALID_SCOPE",
    "CARRY_REF_IN_EXPRESSION",
    "REF_UNKNOWN_PATH",
    "CARRY_PATH_RESERVED",
    "REF_UNKNOWN_STEP",
    "REF_OUTPUT_CONTRACT_REQUIRED",
    "REF_UNKNOWN_CARRY",
    "CARRY_REF_BEFORE_INITIAL",
    "FANOUT_OVER_SINGLE_REF",
    "ROUTING_UNKNOWN_TARGET",
    "ROUTING_SELF_TARGET",
    "ROUTING_CYCLE",
    "REF_INVALID",
    "EXPR_INVALID",
}
# codes whose last key may be missing: it is the key the author must write
_MAY_BE_MISSING = {"SCHEMA_INVALID", "FANOUT_OUTPUT_REQUIRES_FINAL_OUT"}


def _lookup(doc: Any, path: str) -> tuple[bool, Any]:
    """(found, value) at a path; every key but the last must exist."""
    node = doc
    segments = [m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _SEGMENTS.finditer(path)]
    for k, seg in enumerate(segments):
        has = (isinstance(node, dict) and seg in node) or (
            isinstance(node, list) and isinstance(seg, int) and seg < len(node)
        )
        if not has:
            assert k == len(segments) - 1, f"{path}: {seg!r} does not exist"
            return False, None
        node = node[seg]
    return True, node


@settings(max_examples=600, deadline=None)
@given(mutated_specs())
def test_error_paths_name_the_key_that_holds_the_construct(doc: Any) -> None:
    _, errors = validate_data(copy.deepcopy(doc))
    for err in errors:
        if not err.path:
            continue
        found, value = _lookup(doc, err.path)
        assert found or err.code in _MAY_BE_MISSING, err
        if err.code in _LAST_KEY:
            assert re.search(_LAST_KEY[err.code] + r"\Z", err.path), err
        if err.code in _AT_STRING:
            assert isinstance(value, str), err
        if err.code == "CARRY_ROOT_ONLY":
            assert err.path != f"flows.{doc['flows']['entry']}.carry", err
        if err.code == "SUBFLOW_BODY_RESTRICTED":
            assert not err.path.startswith(f"flows.{doc['flows']['entry']}.steps"), err


# --- every valid spec in the repository


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", *patterns], capture_output=True, text=True, check=True
    ).stdout.split()
    return [REPO / name for name in out]


def _embedded_specs() -> list[tuple[str, str]]:
    """Module-level YAML strings of the test suite that are v1 specs (the valid specs the
    engine tests run; deliberately broken ones are written inline in their tests).
    Templates, whose placeholders are upper-case words replaced before use, are left out.
    A module whose text never says `flows:` holds none, so only the few that do are parsed
    (every xdist worker collects this module: parsing all 400 cost about 0.5 s of CPU each)."""
    found = []
    for path in _tracked("tests/*.py"):
        source = path.read_text()
        if "flows:" not in source:
            continue
        for stmt in ast.parse(source).body:
            value = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign) else None
            if (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and re.match(r"\s*version: 1\n", value.value)
                and "\nflows:" in value.value
                and not re.search(r"\b[A-Z][A-Z_]{3,}\b", value.value)
            ):
                found.append((f"{path.relative_to(REPO)}:{stmt.lineno}", value.value))
    return found


SPEC_FILES = _tracked("*.stratum.yaml")
EMBEDDED = _embedded_specs()


def test_the_repository_has_specs_to_check() -> None:
    assert len(SPEC_FILES) >= 8
    assert len(EMBEDDED) >= 5


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_spec_file_in_the_repository_validates(path: Path) -> None:
    assert load_spec(path)[1] == []


@pytest.mark.parametrize(("where", "text"), EMBEDDED, ids=[w for w, _ in EMBEDDED])
def test_every_spec_embedded_in_the_tests_validates(where: str, text: str) -> None:
    assert load_yaml(text)["version"] == 1
    assert load_spec(text)[1] == []
