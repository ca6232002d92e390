"""Every example spec of the seed README validates; hostile documents are refused with
one error instead of being expanded or crashing the validator."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from strato.flow.spec import DoStep, FanoutStep, GateStep
from strato.flow.validate import check_entry_input, load_spec

FIXTURES = Path(__file__).parent / "fixtures"
README_EXAMPLES = sorted(FIXTURES.glob("readme_*.stratum.yaml"))


def test_all_seven_readme_examples_are_extracted() -> None:
    assert len(README_EXAMPLES) == 7


@pytest.mark.parametrize(
    "path", [*README_EXAMPLES, FIXTURES / "carry_waves.stratum.yaml"], ids=lambda p: p.name
)
def test_example_validates(path: Path) -> None:
    spec, errors = load_spec(path)
    assert errors == []
    assert spec is not None
    assert spec.entry in spec.flow_map


def test_the_ir_is_typed() -> None:
    spec, _ = load_spec(FIXTURES / "readme_all_constructs.stratum.yaml")
    assert spec is not None
    main = spec.flow("main")
    assert main is not None
    kinds = [s.kind for s in main.typed_steps]
    assert kinds == ["do", "set", "gate", "fanout", "run", "do"]
    analyze, _, review, inspect, *_ = main.typed_steps
    assert isinstance(analyze, DoStep) and analyze.agent == "claude"
    assert isinstance(review, GateStep) and review.gate.on_revise is None
    assert isinstance(inspect, FanoutStep) and inspect.fanout.dispatch == "engine"
    assert list(spec.flow_map) == ["main", "summarize"]


def test_text_and_path_inputs_agree(tmp_path: Path) -> None:
    text = (FIXTURES / "readme_minimal.stratum.yaml").read_text()
    from_text, _ = load_spec(text)
    from_path, _ = load_spec(FIXTURES / "readme_minimal.stratum.yaml")
    assert from_text == from_path


def _chain(n: int) -> str:
    steps = [{"id": "s0", "do": "start ${input.topic}", "out": "R"}] + [
        {"id": f"s{i}", "after": [f"s{i - 1}"], "do": f"next ${{s{i - 1}.output.text}}", "out": "R"}
        for i in range(1, n)
    ]
    main = {
        "input": {"topic": "string"},
        "steps": steps,
        "output": {"from": f"${{s{n - 1}.output}}", "contract": "R"},
    }
    doc = {
        "version": 1,
        "contracts": {"R": {"text": "string"}},
        "flows": {"entry": "main", "main": main},
    }
    return json.dumps(doc)


def test_ten_thousand_steps_validate() -> None:
    spec, errors = load_spec(_chain(10_000))
    assert errors == []
    assert spec is not None and len(spec.flow_map["main"].steps) == 10_000


def test_cycle_at_the_end_of_a_long_chain_is_found() -> None:
    doc = json.loads(_chain(2_000))
    doc["flows"]["main"]["steps"][0]["after"] = ["s1999"]
    _, errors = load_spec(json.dumps(doc))
    assert [(e.code, e.path) for e in errors] == [
        ("ROUTING_CYCLE", "flows.main.steps[1999].after[0]")
    ]


BOMB = "\n".join(
    ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (BOMB, "YAML_INVALID"),
        ("a: &a [*a]", "YAML_INVALID"),
        ("[" * 5000 + "]" * 5000, "YAML_INVALID"),
        ("version: 1\nversion: 1\n", "YAML_INVALID"),
        ("version: 1\ncontracts: {\n", "YAML_INVALID"),
        ("!!python/object/apply:os.system ['true']", "YAML_INVALID"),
        ("just a string", "SCHEMA_INVALID"),
        ("- 1\n- 2\n", "SCHEMA_INVALID"),
        ("", "SCHEMA_INVALID"),
    ],
    ids=[
        "alias-bomb",
        "recursive-alias",
        "deep-nesting",
        "duplicate-key",
        "broken",
        "python-tag",
        "scalar",
        "list",
        "empty",
    ],
)
def test_hostile_documents(text: str, code: str) -> None:
    spec, errors = load_spec(text)
    assert spec is None
    assert [e.code for e in errors] == [code]


def test_unreadable_files(tmp_path: Path) -> None:
    binary = tmp_path / "spec.yaml"
    binary.write_bytes(b"version: 1\n\xff\xfe")
    missing = tmp_path / "missing.yaml"
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # must not block waiting for a writer
    for path in (binary, missing, tmp_path, fifo, Path("/dev/zero")):
        spec, errors = load_spec(path)
        assert spec is None and [e.code for e in errors] == ["SPEC_UNREADABLE"]


def test_yaml_reads_like_yaml_1_2() -> None:
    # `yes`/`on` are strings and dates stay text, as in Stratum's JavaScript loader
    doc = (
        (FIXTURES / "readme_minimal.stratum.yaml")
        .read_text()
        .replace('"Classify the sentiment of ${input.text}"', "on")
    )
    spec, errors = load_spec(doc)
    assert errors == [] and spec is not None
    step = spec.flow_map["classify"].typed_steps[0]
    assert isinstance(step, DoStep) and step.do == "on"


def test_entry_input_is_checked_against_the_strict_contract() -> None:
    spec, _ = load_spec(FIXTURES / "carry_waves.stratum.yaml")
    assert spec is not None
    assert check_entry_input(spec, {"goal": "ship it"}) == []
    assert check_entry_input(spec, {"goal": "ship it", "strict": None}) == []
    errors = check_entry_input(spec, {"strict": "yes", "extra": 1})
    assert sorted((e.code, e.path) for e in errors) == [
        ("INPUT_CONTRACT_INVALID", "input.extra"),
        ("INPUT_CONTRACT_INVALID", "input.goal"),
        ("INPUT_CONTRACT_INVALID", "input.strict"),
    ]
    assert [e.path for e in check_entry_input(spec, ["goal"])] == ["input"]


def test_megabyte_strings_in_a_spec() -> None:
    big = "x" * (1 << 20)
    doc = json.loads(_chain(2))
    doc["flows"]["main"]["steps"][0]["do"] = big + " ${input.topic}"
    spec, errors = load_spec(json.dumps(doc))
    assert errors == [] and spec is not None
    doc["flows"]["main"]["steps"][0]["when"] = "'" + big + "' != ''"
    _, errors = load_spec(json.dumps(doc))
    assert [e.code for e in errors] == ["EXPR_INVALID"]
    assert "resource_limit" in errors[0].message
