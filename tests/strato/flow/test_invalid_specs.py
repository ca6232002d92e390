"""The table of invalid specs: each yields exactly the expected code at the expected path
(structural errors: exactly one issue; semantic errors: the first one)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from strato.flow.validate import load_spec

A = {"id": "a", "do": "work on ${input.topic}", "out": "R"}


def make(
    steps: list[Any] | None = None,
    flow: dict[str, Any] | None = None,
    flows: dict[str, Any] | None = None,
    contracts: dict[str, Any] | None = None,
    root: dict[str, Any] | None = None,
) -> str:
    """A valid spec with the given parts replaced, as JSON text (JSON is YAML)."""
    main: dict[str, Any] = {
        "input": {"topic": "string"},
        "output": {"from": "${a.output}", "contract": "R"},
        "steps": steps if steps is not None else [dict(A)],
    }
    main.update(flow or {})
    doc: dict[str, Any] = {
        "version": 1,
        "contracts": contracts
        if contracts is not None
        else {"R": {"text": "string", "n": "number", "items": "string[]", "meta": "object"}},
        "flows": {"entry": "main", "main": main, **(flows or {})},
    }
    doc.update(root or {})
    return json.dumps(doc)


def gate(
    gid: str,
    after: list[str],
    approve: Any = None,
    revise: Any = None,
    kill: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": gid,
        "after": after,
        "gate": {"on_approve": approve, "on_revise": revise, "on_kill": kill},
        **extra,
    }


def fan(
    fid: str, over: str = "${input.list}", stages: list[Any] | None = None, **fanout: Any
) -> dict[str, Any]:
    body = {
        "over": over,
        "steps": stages or [{"do": "inspect ${item}", "out": "R"}],
        "concurrency": 2,
        "isolation": "none",
        "require": "all",
        "merge": "sequential",
    }
    body.update(fanout)
    return {"id": fid, "fanout": body}


LIST_INPUT = {"topic": "string", "list": "string[]"}


def consumer(*after: dict[str, Any], stages: list[Any] | None = None) -> str:
    """A spec whose step f is a consumer-dispatched worktree fanout, then `after`."""
    fanout = fan("f", stages=stages, dispatch="consumer", isolation="worktree")
    return make(steps=[A, fanout, *after], flow={"input": LIST_INPUT})


SUB = {
    "input": {"topic": "string"},
    "output": {"from": "${s.output}", "contract": "R"},
    "steps": [{"id": "s", "do": "sub ${input.topic}", "out": "R"}],
}
WAVE = {"wave": {"initial": "${a.output.items}"}}
CALL_MAIN = {"id": "r", "after": ["s"], "run": "main", "with": {"topic": "x"}}

CASES: list[tuple[str, str, str, str]] = [
    # --- stage 1: structure
    ("root unknown key", make(root={"workflow": {}}), "E2_UNKNOWN_FIELD", "workflow"),
    ("flow unknown key", make(flow={"next": "x"}), "E2_UNKNOWN_FIELD", "flows.main.next"),
    (
        "step unknown key",
        make(steps=[{**A, "intent": "x"}]),
        "E2_UNKNOWN_FIELD",
        "flows.main.steps[0].intent",
    ),
    (
        "gate unknown key",
        make(
            steps=[
                A,
                {
                    "id": "g",
                    "gate": {"on_approve": None, "on_revise": None, "on_kill": None, "policy": "x"},
                },
            ]
        ),
        "E2_UNKNOWN_FIELD",
        "flows.main.steps[1].gate.policy",
    ),
    (
        "stage unknown key",
        make(steps=[A, fan("f", stages=[{"do": "x", "iterate": {}}])], flow={"input": LIST_INPUT}),
        "E2_UNKNOWN_FIELD",
        "flows.main.steps[1].fanout.steps[0].iterate",
    ),
    (
        "ensure unknown key",
        make(steps=[{**A, "ensure": [{"expr": "true", "why": "x"}]}]),
        "E2_UNKNOWN_FIELD",
        "flows.main.steps[0].ensure[0].why",
    ),
    (
        "output unknown key",
        make(flow={"output": {"from": "${a.output}", "contract": "R", "schema": {}}}),
        "E2_UNKNOWN_FIELD",
        "flows.main.output.schema",
    ),
    (
        "budget unknown key",
        make(flow={"budget": {"usd": 1, "turns": 3}}),
        "E2_UNKNOWN_FIELD",
        "flows.main.budget.turns",
    ),
    (
        "two constructs",
        make(steps=[{**A, "set": {"text": "'x'"}}]),
        "E2_CONSTRUCT_MIX",
        "flows.main.steps[0]",
    ),
    (
        "no construct",
        make(steps=[A, {"id": "b", "after": ["a"]}]),
        "E2_CONSTRUCT_MIX",
        "flows.main.steps[1]",
    ),
    (
        "attempts on a gate",
        make(steps=[A, gate("g", ["a"], attempts=2)]),
        "E2_FIELD_FOR_KIND",
        "flows.main.steps[1].attempts",
    ),
    (
        "agent on a set",
        make(steps=[A, {"id": "b", "set": {"text": "'x'"}, "out": "R", "agent": "claude"}]),
        "E2_FIELD_FOR_KIND",
        "flows.main.steps[1].agent",
    ),
    (
        "ensure on a run",
        make(
            steps=[A, {"id": "r", "run": "sub", "with": {"topic": "x"}, "ensure": []}],
            flows={"sub": SUB},
        ),
        "E2_FIELD_FOR_KIND",
        "flows.main.steps[1].ensure",
    ),
    (
        "reserved contract name",
        make(
            contracts={
                "R": {"text": "string", "n": "number", "items": "string[]", "meta": "object"},
                "__proto__": {"x": "string"},
            }
        ),
        "E2_RESERVED_FIELD",
        "contracts.__proto__",
    ),
    (
        "reserved contract field",
        make(
            contracts={
                "R": {
                    "text": "string",
                    "n": "number",
                    "items": "string[]",
                    "meta": "object",
                    "constructor": "string",
                }
            }
        ),
        "E2_RESERVED_FIELD",
        "contracts.R.constructor",
    ),
    ("version as a string", make(root={"version": "1"}), "SCHEMA_INVALID", "version"),
    ("version 2", make(root={"version": 2}), "SCHEMA_INVALID", "version"),
    ("version true", make(root={"version": True}), "SCHEMA_INVALID", "version"),
    ("empty budget", make(flow={"budget": {}}), "SCHEMA_INVALID", "flows.main.budget"),
    (
        "bad agent",
        make(steps=[{**A, "agent": "gpt"}]),
        "SCHEMA_INVALID",
        "flows.main.steps[0].agent",
    ),
    ("bad step id", make(steps=[{**A, "id": "Step1"}]), "SCHEMA_INVALID", "flows.main.steps[0].id"),
    (
        "set without out",
        make(steps=[A, {"id": "b", "set": {"text": "'x'"}}]),
        "SCHEMA_INVALID",
        "flows.main.steps[1].out",
    ),
    (
        "run without with",
        make(steps=[A, {"id": "r", "run": "sub"}], flows={"sub": SUB}),
        "SCHEMA_INVALID",
        "flows.main.steps[1].with",
    ),
    (
        "attempts zero",
        make(steps=[{**A, "attempts": 0}]),
        "SCHEMA_INVALID",
        "flows.main.steps[0].attempts",
    ),
    (
        "require zero",
        make(steps=[A, fan("f", require=0)], flow={"input": LIST_INPUT}),
        "SCHEMA_INVALID",
        "flows.main.steps[1].fanout.require",
    ),
    (
        "gate route missing",
        make(steps=[A, {"id": "g", "gate": {"on_approve": None, "on_kill": None}}]),
        "SCHEMA_INVALID",
        "flows.main.steps[1].gate.on_revise",
    ),
    (
        "bad stakes",
        make(steps=[{**A, "ensure": [{"judged": {"statement": "ok", "stakes": "high"}}]}]),
        "SCHEMA_INVALID",
        "flows.main.steps[0].ensure[0].judged.stakes",
    ),
    (
        "flow entry missing",
        make(root={"flows": {"main": json.loads(make())["flows"]["main"]}}),
        "SCHEMA_INVALID",
        "flows.entry",
    ),
    ("contracts is a list", make(root={"contracts": []}), "SCHEMA_INVALID", "contracts"),
    # --- stage 2: contracts
    (
        "invalid contract type",
        make(contracts={"R": {"text": "str"}}),
        "CONTRACT_INVALID_TYPE",
        "contracts.R.text",
    ),
    (
        "optional array item",
        make(contracts={"R": {"text": "string?[]"}}),
        "CONTRACT_INVALID_TYPE",
        "contracts.R.text",
    ),
    (
        "unknown contract ref",
        make(contracts={"R": {"text": "string", "sub": "Missing"}}),
        "CONTRACT_UNKNOWN_REF",
        "contracts.R.sub",
    ),
    (
        "recursive contract",
        make(contracts={"R": {"text": "string", "kids": "Node[]"}, "Node": {"parent": "R?"}}),
        "CONTRACT_RECURSIVE_REF",
        "contracts.Node.parent",
    ),
    (
        "contract cycle closed at the reference the walk meets last",
        make(
            contracts={
                "R": {"text": "string", "a": "A?"},
                "A": {"b": "B"},
                "B": {"c": "C[]"},
                "C": {"back": "B?"},
            }
        ),
        "CONTRACT_RECURSIVE_REF",
        "contracts.C.back",
    ),
    (
        "contract cycle among contracts declared before the first one reaches them",
        make(contracts={"R": {"text": "string"}, "X": {"y": "Y"}, "Y": {"x": "X"}}),
        "CONTRACT_RECURSIVE_REF",
        "contracts.Y.x",
    ),
    # --- stage 3: entry and subflows
    (
        "unknown entry",
        make(root={"flows": {"entry": "nope", "main": json.loads(make())["flows"]["main"]}}),
        "FLOW_UNKNOWN_ENTRY",
        "flows.entry",
    ),
    (
        "unknown subflow",
        make(steps=[A, {"id": "r", "run": "nope", "with": {}}]),
        "SUBFLOW_UNKNOWN",
        "flows.main.steps[1].run",
    ),
    (
        "with mismatch",
        make(steps=[A, {"id": "r", "run": "sub", "with": {"subject": "x"}}], flows={"sub": SUB}),
        "SUBFLOW_WITH_MISMATCH",
        "flows.main.steps[1].with",
    ),
    # --- stage 4: declarations
    (
        "unknown output contract",
        make(flow={"output": {"from": "${a.output}", "contract": "Nope"}}),
        "CONTRACT_UNKNOWN_REF",
        "flows.main.output.contract",
    ),
    (
        "invalid input type",
        make(flow={"input": {"topic": "text"}}),
        "CONTRACT_INVALID_TYPE",
        "flows.main.input.topic",
    ),
    (
        "unknown input contract",
        make(flow={"input": {"topic": "Topic"}}),
        "CONTRACT_UNKNOWN_REF",
        "flows.main.input.topic",
    ),
    ("duplicate step id", make(steps=[A, {**A}]), "STEP_DUPLICATE_ID", "flows.main.steps[1].id"),
    (
        "unknown step out",
        make(steps=[{**A, "out": "Nope"}]),
        "CONTRACT_UNKNOWN_REF",
        "flows.main.steps[0].out",
    ),
    # --- stage 5: edges
    (
        "after unknown",
        make(steps=[{**A, "after": ["zzz"]}]),
        "ROUTING_UNKNOWN_TARGET",
        "flows.main.steps[0].after[0]",
    ),
    (
        "after self",
        make(steps=[{**A, "after": ["a"]}]),
        "ROUTING_SELF_TARGET",
        "flows.main.steps[0].after[0]",
    ),
    (
        "on_fail unknown",
        make(steps=[{**A, "on_fail": "zzz"}]),
        "ROUTING_UNKNOWN_TARGET",
        "flows.main.steps[0].on_fail",
    ),
    (
        "after cycle",
        make(steps=[{**A, "after": ["b"]}, {"id": "b", "do": "x", "after": ["a"]}]),
        "ROUTING_CYCLE",
        "flows.main.steps[1].after[0]",
    ),
    (
        "reference cycle",
        make(
            steps=[
                {**A, "do": "use ${b.output.text}"},
                {"id": "b", "do": "use ${a.output.text}", "out": "R"},
            ]
        ),
        "ROUTING_CYCLE",
        "flows.main.steps[1].do",
    ),
    (
        "approve route cycle",
        make(steps=[A, gate("g", ["a"], approve="a")]),
        "ROUTING_CYCLE",
        "flows.main.steps[1].gate.on_approve",
    ),
    (
        "fanout over text",
        make(steps=[A, fan("f", over="items: ${input.list}")], flow={"input": LIST_INPUT}),
        "FANOUT_OVER_SINGLE_REF",
        "flows.main.steps[1].fanout.over",
    ),
    # --- stage 6: references
    (
        "unterminated ref",
        make(steps=[{**A, "do": "work on ${input.topic"}]),
        "REF_INVALID",
        "flows.main.steps[0].do",
    ),
    (
        "bare input ref",
        make(steps=[{**A, "do": "work on ${input}"}]),
        "REF_INVALID",
        "flows.main.steps[0].do",
    ),
    (
        "item outside fanout",
        make(steps=[{**A, "do": "work on ${item}"}]),
        "REF_INVALID_SCOPE",
        "flows.main.steps[0].do",
    ),
    (
        "carry in when",
        make(
            steps=[A, {"id": "b", "after": ["a"], "do": "x", "when": "${wave} == 1"}],
            flow={"carry": WAVE},
        ),
        "CARRY_REF_IN_EXPRESSION",
        "flows.main.steps[1].when",
    ),
    (
        "unknown input field",
        make(steps=[{**A, "do": "work on ${input.subject}"}]),
        "REF_UNKNOWN_PATH",
        "flows.main.steps[0].do",
    ),
    (
        "path into a scalar",
        make(steps=[A, {"id": "b", "do": "x ${a.output.text.len}"}]),
        "REF_UNKNOWN_PATH",
        "flows.main.steps[1].do",
    ),
    (
        "unknown contract field",
        make(steps=[A, {"id": "b", "do": "x ${a.output.nope}"}]),
        "REF_UNKNOWN_PATH",
        "flows.main.steps[1].do",
    ),
    (
        "carry .output path",
        make(
            steps=[A, {"id": "b", "after": ["a"], "do": "x ${wave.output}"}], flow={"carry": WAVE}
        ),
        "CARRY_PATH_RESERVED",
        "flows.main.steps[1].do",
    ),
    (
        "unknown step ref",
        make(steps=[A, {"id": "b", "do": "x ${zzz.output}"}]),
        "REF_UNKNOWN_STEP",
        "flows.main.steps[1].do",
    ),
    (
        "fanout without final out",
        make(
            steps=[
                A,
                fan("f", stages=[{"do": "x ${item}"}]),
                {"id": "b", "do": "x ${f.output[0]}"},
            ],
            flow={"input": LIST_INPUT},
        ),
        "FANOUT_OUTPUT_REQUIRES_FINAL_OUT",
        "flows.main.steps[1].fanout.steps[0].out",
    ),
    (
        "fanout whose last of two stages has no out, referenced from a later step",
        make(
            steps=[
                A,
                {"id": "b", "after": ["f"], "do": "x ${f.output[0].text}"},
                fan("f", stages=[{"do": "x ${item}", "out": "R"}, {"do": "y ${prev}"}]),
            ],
            flow={"input": LIST_INPUT},
        ),
        "FANOUT_OUTPUT_REQUIRES_FINAL_OUT",
        "flows.main.steps[2].fanout.steps[1].out",
    ),
    (
        "ref to a do without out",
        make(steps=[A, {"id": "b", "do": "x"}, {"id": "c", "do": "y ${b.output}"}]),
        "REF_OUTPUT_CONTRACT_REQUIRED",
        "flows.main.steps[2].do",
    ),
    (
        "ref to a gate output",
        make(steps=[A, gate("g", ["a"]), {"id": "c", "do": "y ${g.output}"}]),
        "REF_OUTPUT_CONTRACT_REQUIRED",
        "flows.main.steps[2].do",
    ),
    (
        "unknown output path before the self edge of the same field",
        make(steps=[{**A, "do": "again ${a.output.nope}"}]),
        "REF_UNKNOWN_PATH",
        "flows.main.steps[0].do",
    ),
    (
        "unknown output path before the cycle its edge closes",
        make(steps=[{**A, "after": ["b"]}, {"id": "b", "do": "x ${a.output.text.more}"}]),
        "REF_UNKNOWN_PATH",
        "flows.main.steps[1].do",
    ),
    (
        "unknown input path before a cycle closed by another reference in the field",
        make(steps=[{**A, "after": ["b"]}, {"id": "b", "do": "x ${a.output} ${input.nope}"}]),
        "REF_UNKNOWN_PATH",
        "flows.main.steps[1].do",
    ),
    (
        "unknown path in a stage before the fanout's cycle",
        make(
            steps=[
                {**A, "after": ["f"]},
                fan("f", stages=[{"do": "x ${a.output.items.x}", "out": "R"}]),
            ],
            flow={"input": LIST_INPUT},
        ),
        "REF_UNKNOWN_PATH",
        "flows.main.steps[1].fanout.steps[0].do",
    ),
    # --- stage 7: consumer worktree fanout
    (
        "consumer fanout file ensure",
        consumer(gate("g", ["f"]), stages=[{"do": "x", "ensure": [{"file_exists": "out.txt"}]}]),
        "CONSUMER_WORKTREE_FILESYSTEM_UNSUPPORTED",
        "flows.main.steps[1].fanout.steps[0].ensure[0]",
    ),
    (
        "consumer fanout file when",
        consumer(gate("g", ["f"]), stages=[{"do": "x", "when": "file_exists('a')"}]),
        "CONSUMER_WORKTREE_FILESYSTEM_UNSUPPORTED",
        "flows.main.steps[1].fanout.steps[0].when",
    ),
    (
        "consumer fanout without gate",
        consumer(),
        "CONSUMER_WORKTREE_GATE_REQUIRED",
        "flows.main.steps[1].fanout",
    ),
    (
        "consumer fanout conditional gate",
        consumer(gate("g", ["f"], when="true")),
        "CONSUMER_WORKTREE_GATE_REQUIRED",
        "flows.main.steps[1].fanout",
    ),
    # --- stage 8: carry
    (
        "carry in a subflow",
        make(
            steps=[A, {"id": "r", "after": ["a"], "run": "sub", "with": {"topic": "x"}}],
            flows={"sub": {**SUB, "carry": {"w": {"initial": "${s.output}"}}}},
        ),
        "CARRY_ROOT_ONLY",
        "flows.sub.carry",
    ),
    (
        "empty carry on a flow nobody calls",
        make(flows={"sub": {**SUB, "carry": {}}}),
        "CARRY_ROOT_ONLY",
        "flows.sub.carry",
    ),
    (
        "empty carry in a subflow",
        make(
            steps=[A, {"id": "r", "after": ["a"], "run": "sub", "with": {"topic": "x"}}],
            flows={"sub": {**SUB, "carry": {}}},
        ),
        "CARRY_ROOT_ONLY",
        "flows.sub.carry",
    ),
    (
        "carry named like a step",
        make(flow={"carry": {"a": {"initial": "${input.topic}"}}}),
        "CARRY_NAME_CONFLICT",
        "flows.main.carry.a",
    ),
    (
        "carry named input",
        make(flow={"carry": {"input": {"initial": "${input.topic}"}}}),
        "CARRY_NAME_CONFLICT",
        "flows.main.carry.input",
    ),
    (
        "carry initial interpolated",
        make(flow={"carry": {"w": {"initial": "x ${input.topic}"}}}),
        "CARRY_REF_INVALID",
        "flows.main.carry.w.initial",
    ),
    (
        "carry initial conditional",
        make(steps=[{**A, "when": "true"}], flow={"carry": WAVE}),
        "CARRY_INITIAL_SOURCE_CONDITIONAL",
        "flows.main.carry.wave.initial",
    ),
    (
        "unknown carry",
        make(steps=[A, {"id": "b", "after": ["a"], "do": "x ${tide}"}]),
        "REF_UNKNOWN_CARRY",
        "flows.main.steps[1].do",
    ),
    (
        "carry read before initial",
        make(steps=[A, {"id": "b", "do": "x ${wave}"}], flow={"carry": WAVE}),
        "CARRY_REF_BEFORE_INITIAL",
        "flows.main.steps[1].do",
    ),
    (
        "carry revise by a non-gate",
        make(
            steps=[A, {"id": "b", "after": ["a"], "do": "x ${wave}"}],
            flow={
                "carry": {
                    "wave": {
                        "initial": "${a.output.items}",
                        "on_revise": {"b": "${a.output.items}"},
                    }
                }
            },
        ),
        "CARRY_UNKNOWN_GATE",
        "flows.main.carry.wave.on_revise.b",
    ),
    (
        "carry revise gate without target",
        make(
            steps=[A, {"id": "b", "after": ["a"], "do": "x ${wave}"}, gate("g", ["b"])],
            flow={
                "carry": {
                    "wave": {
                        "initial": "${a.output.items}",
                        "on_revise": {"g": "${a.output.items}"},
                    }
                }
            },
        ),
        "CARRY_REVISE_TARGET_NULL",
        "flows.main.carry.wave.on_revise.g",
    ),
    (
        "carry revise misses reader",
        make(
            steps=[
                A,
                {"id": "b", "after": ["a"], "do": "x ${wave}"},
                {"id": "c", "after": ["b"], "do": "y"},
                gate("g", ["b", "c"], revise="c"),
            ],
            flow={
                "max_rounds": 2,
                "carry": {
                    "wave": {
                        "initial": "${a.output.items}",
                        "on_revise": {"g": "${a.output.items}"},
                    }
                },
            },
        ),
        "CARRY_REVISE_MISSES_CONSUMER",
        "flows.main.carry.wave.on_revise.g",
    ),
    (
        "carry revise gate before reader",
        make(
            steps=[
                A,
                {"id": "b", "after": ["a"], "do": "x"},
                gate("g", ["b"], revise="b"),
                {"id": "c", "after": ["b"], "do": "y ${wave}"},
            ],
            flow={
                "max_rounds": 2,
                "carry": {
                    "wave": {
                        "initial": "${a.output.items}",
                        "on_revise": {"g": "${a.output.items}"},
                    }
                },
            },
        ),
        "CARRY_REVISE_GATE_NOT_AFTER_CONSUMER",
        "flows.main.carry.wave.on_revise.g",
    ),
    # --- stage 9: revise gates
    (
        "revise without max_rounds",
        make(steps=[A, gate("g", ["a"], revise="a")]),
        "GATE_REVISE_REQUIRES_MAX_ROUNDS",
        "flows.main.steps[1].gate.on_revise",
    ),
    (
        "revise to unknown",
        make(steps=[A, gate("g", ["a"], revise="zzz")], flow={"max_rounds": 2}),
        "ROUTING_UNKNOWN_TARGET",
        "flows.main.steps[1].gate.on_revise",
    ),
    (
        "revise to itself",
        make(steps=[A, gate("g", ["a"], revise="g")], flow={"max_rounds": 2}),
        "ROUTING_SELF_TARGET",
        "flows.main.steps[1].gate.on_revise",
    ),
    (
        "revise to a non-ancestor",
        make(
            steps=[A, gate("g", ["a"], revise="b"), {"id": "b", "after": ["g"], "do": "x"}],
            flow={"max_rounds": 2},
        ),
        "GATE_REVISE_NOT_ANCESTOR",
        "flows.main.steps[1].gate.on_revise",
    ),
    # --- stage 10: output.from
    (
        "output from input",
        make(flow={"output": {"from": "${input.topic}", "contract": "R"}}),
        "REF_INVALID",
        "flows.main.output.from",
    ),
    (
        "output from text",
        make(flow={"output": {"from": "result: ${a.output}", "contract": "R"}}),
        "REF_INVALID",
        "flows.main.output.from",
    ),
    (
        "output from unknown step",
        make(flow={"output": {"from": "${zzz.output}", "contract": "R"}}),
        "REF_UNKNOWN_STEP",
        "flows.main.output.from",
    ),
    (
        "output from unindexed fanout",
        make(
            steps=[A, fan("f")],
            flow={"input": LIST_INPUT, "output": {"from": "${f.output}", "contract": "R"}},
        ),
        "REF_UNKNOWN_PATH",
        "flows.main.output.from",
    ),
    # --- stage 11: subflows
    (
        "recursive subflow",
        make(steps=[A, {"id": "r", "after": ["a"], "run": "main", "with": {"topic": "x"}}]),
        "SUBFLOW_RECURSIVE",
        "flows.main.steps[1].run",
    ),
    (
        "fanout in a subflow",
        make(flows={"sub": {**SUB, "input": LIST_INPUT, "steps": [*SUB["steps"], fan("f")]}}),
        "SUBFLOW_BODY_RESTRICTED",
        "flows.sub.steps[1].fanout",
    ),
    (
        "run in a subflow",
        make(
            steps=[A, {"id": "r", "after": ["a"], "run": "sub", "with": {"topic": "x"}}],
            flows={
                "sub": {**SUB, "steps": [*SUB["steps"], {"id": "r", "run": "leaf", "with": {}}]},
                "leaf": {**SUB, "input": {}, "steps": [{"id": "s", "do": "leaf", "out": "R"}]},
            },
        ),
        "SUBFLOW_BODY_RESTRICTED",
        "flows.sub.steps[1].run",
    ),
    (
        "subflow cycle closed by the callee's run",
        make(
            steps=[A, {"id": "r", "after": ["a"], "run": "sub", "with": {"topic": "x"}}],
            flows={"sub": {**SUB, "steps": [*SUB["steps"], CALL_MAIN]}},
        ),
        "SUBFLOW_RECURSIVE",
        "flows.sub.steps[1].run",
    ),
    (
        "subflow cycle closed where the walk from the entry flow meets it again",
        make(
            steps=[A, {"id": "r", "after": ["a"], "run": "one", "with": {"topic": "x"}}],
            flows={
                "one": {**SUB, "steps": [*SUB["steps"], {**CALL_MAIN, "run": "two"}]},
                "two": {**SUB, "steps": [*SUB["steps"], {**CALL_MAIN, "run": "one"}]},
            },
        ),
        "SUBFLOW_RECURSIVE",
        "flows.two.steps[1].run",
    ),
    # --- stage 12 (ours): expressions parse
    (
        "expression does not parse",
        make(steps=[{**A, "ensure": [{"expr": "result.n >"}]}]),
        "EXPR_INVALID",
        "flows.main.steps[0].ensure[0].expr",
    ),
    # --- unreadable
    ("not YAML", "version: 1\nflows: [\n", "YAML_INVALID", ""),
]


@pytest.mark.parametrize(
    ("text", "code", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_invalid_spec_yields_exactly_its_code_and_path(text: str, code: str, path: str) -> None:
    spec, errors = load_spec(text)
    assert spec is None
    assert [(e.code, e.path) for e in errors] == [(code, path)], errors
    assert errors[0].message


def test_every_reference_code_is_in_the_table() -> None:
    codes = {c[2] for c in CASES}
    expected = {
        "E2_UNKNOWN_FIELD",
        "E2_CONSTRUCT_MIX",
        "E2_FIELD_FOR_KIND",
        "E2_RESERVED_FIELD",
        "SCHEMA_INVALID",
        "CONTRACT_INVALID_TYPE",
        "CONTRACT_UNKNOWN_REF",
        "CONTRACT_RECURSIVE_REF",
        "FLOW_UNKNOWN_ENTRY",
        "SUBFLOW_UNKNOWN",
        "SUBFLOW_WITH_MISMATCH",
        "STEP_DUPLICATE_ID",
        "ROUTING_UNKNOWN_TARGET",
        "ROUTING_SELF_TARGET",
        "ROUTING_CYCLE",
        "FANOUT_OVER_SINGLE_REF",
        "REF_INVALID",
        "REF_INVALID_SCOPE",
        "CARRY_REF_IN_EXPRESSION",
        "REF_UNKNOWN_PATH",
        "CARRY_PATH_RESERVED",
        "REF_UNKNOWN_STEP",
        "FANOUT_OUTPUT_REQUIRES_FINAL_OUT",
        "REF_OUTPUT_CONTRACT_REQUIRED",
        "CONSUMER_WORKTREE_FILESYSTEM_UNSUPPORTED",
        "CONSUMER_WORKTREE_GATE_REQUIRED",
        "CARRY_ROOT_ONLY",
        "CARRY_NAME_CONFLICT",
        "CARRY_REF_INVALID",
        "CARRY_INITIAL_SOURCE_CONDITIONAL",
        "REF_UNKNOWN_CARRY",
        "CARRY_REF_BEFORE_INITIAL",
        "CARRY_UNKNOWN_GATE",
        "CARRY_REVISE_TARGET_NULL",
        "CARRY_REVISE_MISSES_CONSUMER",
        "CARRY_REVISE_GATE_NOT_AFTER_CONSUMER",
        "GATE_REVISE_REQUIRES_MAX_ROUNDS",
        "GATE_REVISE_NOT_ANCESTOR",
        "SUBFLOW_RECURSIVE",
        "SUBFLOW_BODY_RESTRICTED",
    }
    assert expected <= codes
    assert len(CASES) >= 40


def test_structural_pass_reports_every_issue() -> None:
    text = make(root={"extra": 1}, steps=[{**A, "intent": "x", "attempts": 0}])
    _, errors = load_spec(text)
    assert sorted((e.code, e.path) for e in errors) == [
        ("E2_UNKNOWN_FIELD", "extra"),
        ("E2_UNKNOWN_FIELD", "flows.main.steps[0].intent"),
        ("SCHEMA_INVALID", "flows.main.steps[0].attempts"),
    ]


def test_semantic_order_first_error_wins() -> None:
    # a bad contract type (stage 2) and an unknown entry (stage 3): stage 2 wins
    doc = json.loads(make(contracts={"R": {"text": "str"}}))
    doc["flows"]["entry"] = "nope"
    _, errors = load_spec(json.dumps(doc))
    assert [e.code for e in errors] == ["CONTRACT_INVALID_TYPE"]


def test_a_long_chain_of_contracts_is_walked_without_recursion() -> None:
    """5,000 contracts each naming the next, the last naming the first: far deeper than
    Python's recursion limit, still one error at the reference that closes the cycle."""
    n = 5000
    chain = {f"C{k}": {"next": f"C{k + 1}?"} for k in range(n - 1)}
    chain[f"C{n - 1}"] = {"back": "C0?"}
    _, errors = load_spec(make(contracts={"R": {"text": "string"}, **chain}))
    assert [(e.code, e.path) for e in errors] == [("CONTRACT_RECURSIVE_REF", f"contracts.C{n - 1}.back")]
