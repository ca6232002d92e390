"""`${...}` references: parsing is all-or-nothing; rendering keeps JSON types for a
full-value reference and interpolates embedded ones."""

from __future__ import annotations

from typing import Any

import pytest

from strato.flow.refs import (
    Ref,
    RefSyntaxError,
    Scope,
    Unresolved,
    parse_template,
    render,
    render_task,
    render_value,
)


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ("plain text", []),
        ("${input.text}", [Ref("input", "", ("text",), "input.text")]),
        ("${work.output}", [Ref("step", "work", (), "work.output")]),
        ("${fan.output[0].value}", [Ref("step", "fan", (0, "value"), "fan.output[0].value")]),
        ("${wave}", [Ref("carry", "wave", (), "wave")]),
        ("${wave.outputs}", [Ref("carry", "wave", ("outputs",), "wave.outputs")]),
        (
            "${item} then ${prev.x}",
            [Ref("item", "", (), "item"), Ref("prev", "", ("x",), "prev.x")],
        ),
        ("cost: $5 {not a ref}", []),
    ],
)
def test_parse(text: str, refs: list[Ref]) -> None:
    assert parse_template(text).refs == refs


@pytest.mark.parametrize(
    "text",
    [
        "${input}",
        "${ input.text }",
        "${input.}",
        "${Work.output}",
        "${a.output[-1]}",
        "${a${b}}",
        "tail ${",
        "${}",
        "${input.text",
        "${x.output.1a}",
    ],
)
def test_malformed_strings_are_rejected_whole(text: str) -> None:
    with pytest.raises(RefSyntaxError):
        parse_template(text)


def test_full_value_detection() -> None:
    assert parse_template("${input.items}").full == Ref("input", "", ("items",), "input.items")
    assert parse_template(" ${input.items}").full is None
    assert parse_template("${a.output}${b.output}").full is None


SCOPE = Scope(
    input={"items": [1, 2], "name": "ada", "none": None, "obj": {"k": True}},
    outputs={"work": {"text": "done", "n": 1.0, "list": ["x"]}},
    carry={"wave": ["t1", "t2"]},
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("${input.items}", [1, 2]),
        ("${work.output}", {"text": "done", "n": 1.0, "list": ["x"]}),
        ("${wave}", ["t1", "t2"]),
        ("hi ${input.name}", "hi ada"),
        ("[${input.none}]", "[]"),
        ("n=${work.output.n} items=${input.items} o=${input.obj}", 'n=1 items=[1,2] o={"k":true}'),
        ("${work.output.list[0]}", "x"),
    ],
)
def test_render(text: str, value: Any) -> None:
    assert render(text, SCOPE) == value


@pytest.mark.parametrize(
    "text",
    [
        "${skipped.output}",
        "${input.missing}",
        "${work.output.list[5]}",
        "${item}",
        "${work.output.text.deeper}",
    ],
)
def test_unavailable_values_fail(text: str) -> None:
    with pytest.raises(Unresolved):
        render(text, SCOPE)


def test_stage_scope_and_task_rendering() -> None:
    stage = Scope(input={}, item={"path": "a.py"}, prev=None, in_stage=True)
    assert render("fix ${item.path} after ${prev}", stage) == "fix a.py after "
    assert render_task("${item.path}", stage) == "a.py"
    with pytest.raises(Unresolved):
        render_task("${item}", stage)  # an object is not a task text
    assert render_value({"a": ["${input.items}", 3], "b": "x"}, SCOPE) == {
        "a": [[1, 2], 3],
        "b": "x",
    }
