"""The contract type language: parsing, path typing and strict value checks."""

from __future__ import annotations

from typing import Any

import pytest

from strato.flow import types as ty

CONTRACTS = {
    "Result": {
        "label": "pos|neg",
        "score": "number",
        "tags": "string[]",
        "note": "string?",
        "items": "Item[]",
        "meta": "object",
    },
    "Item": {"n": "integer", "kinds": "(a|b)[]"},
}


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("string", ty.Scalar("string")),
        ("integer?", ty.Optional(ty.Scalar("integer"))),
        ("string[][]", ty.ArrayOf(ty.ArrayOf(ty.Scalar("string")))),
        ("(draft|final)[]", ty.ArrayOf(ty.Enum(("draft", "final")))),
        ("draft|final", ty.Enum(("draft", "final"))),
        ("Result[]?", ty.Optional(ty.ArrayOf(ty.Named("Result")))),
        ("array", ty.Untyped("array")),
    ],
)
def test_parse(text: str, parsed: ty.TypeExpr) -> None:
    assert ty.parse_type(text) == parsed


@pytest.mark.parametrize(
    "text",
    ["str", "string?[]", "string??", "a||b", "|a", "(a|b)", "a|b[]", "result", "", "[]", "a|(b)"],
)
def test_invalid(text: str) -> None:
    assert ty.parse_type(text) is None


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        (("label",), True),
        (("items", 0, "kinds", 1), True),
        (("meta", "any", "thing"), True),
        (("score", "x"), False),
        (("items", "n"), False),
        (("nope",), False),
        (("tags", 0, 0), False),
    ],
)
def test_walk(path: tuple[str | int, ...], ok: bool) -> None:
    assert (ty.walk(ty.Named("Result"), path, CONTRACTS) is not None) is ok


GOOD: dict[str, Any] = {
    "label": "pos",
    "score": 1,
    "tags": [],
    "items": [{"n": 2.0, "kinds": ["a"]}],
    "meta": {},
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({}, None),
        ({"note": None}, None),
        ({"note": "x"}, None),
        ({"label": "maybe"}, "label"),
        ({"score": True}, "score"),
        ({"score": float("inf")}, "score"),
        ({"items": [{"n": 1.5, "kinds": []}]}, "items[0].n"),
        ({"items": [{"n": 1, "kinds": ["c"]}]}, "items[0].kinds[0]"),
        ({"extra": 1}, "extra"),
        ({"meta": []}, "meta"),
    ],
)
def test_check_value(change: dict[str, Any], problem: str | None) -> None:
    problems = ty.check_value({**GOOD, **change}, ty.Named("Result"), CONTRACTS)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(problem + ":")


def test_missing_required_field() -> None:
    value = {k: v for k, v in GOOD.items() if k != "score"}
    assert ty.check_value(value, ty.Named("Result"), CONTRACTS) == ["score: required"]
