"""`==`, `!=` and `in` are deep JSON equality without coercion (reference 2.1): values of
different shapes are never equal, whatever a Python `==` or a truncating `zip` says."""

from __future__ import annotations

from typing import Any

import pytest

from strato.flow.expr.evaluator import evaluate

# the expression language has no array or object literals: values come from bindings
VALUES: dict[str, Any] = {
    "one": [1],
    "one_two": [1, 2],
    "two_one": [2, 1],
    "empty": [],
    "nulls": [None],
    "nested_one": [[1]],
    "nested_one_two": [[1, 2]],
    "trues": [True],
    "ones": [1],
    "obj_a": {"a": 1},
    "obj_ab": {"a": 1, "b": 2},
    "obj_a_null": {"a": None},
    "obj_empty": {},
    "obj_true": {"a": True},
    "obj_nested": {"a": {"b": [1]}},
    "obj_nested_longer": {"a": {"b": [1, 1]}},
}


def _eq(left: str, right: str) -> Any:
    return evaluate(f"result.{left} == result.{right}", {"result": VALUES})


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("one", "one_two"),
        ("one_two", "one"),
        ("empty", "nulls"),
        ("nulls", "empty"),
        ("nested_one", "nested_one_two"),
        ("nested_one_two", "nested_one"),
        ("obj_nested", "obj_nested_longer"),
        ("one_two", "two_one"),
    ],
)
def test_arrays_of_different_lengths_or_order_are_not_equal(left: str, right: str) -> None:
    assert _eq(left, right) is False
    assert evaluate(f"result.{left} != result.{right}", {"result": VALUES}) is True


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("obj_a", "obj_ab"),
        ("obj_ab", "obj_a"),
        ("obj_a_null", "obj_empty"),
        ("obj_empty", "obj_a_null"),
        ("obj_empty", "empty"),
        ("obj_true", "obj_a"),
    ],
)
def test_objects_with_different_keys_or_values_are_not_equal(left: str, right: str) -> None:
    assert _eq(left, right) is False


@pytest.mark.parametrize("name", ["empty", "nulls", "obj_empty", "obj_a_null"])
def test_null_equals_no_array_or_object(name: str) -> None:
    assert evaluate(f"null == result.{name}", {"result": VALUES}) is False
    assert evaluate(f"result.{name} == null", {"result": VALUES}) is False
    assert evaluate("result.missing == null", {"result": VALUES}) is True


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("true != 1", True),
        ("true == 1", False),
        ("1 == true", False),
        ("false == 0", False),
        ("result.trues == result.ones", False),
        ("result.obj_true == result.obj_a", False),
        ("'1' == 1", False),
    ],
)
def test_booleans_are_never_numbers(source: str, expected: bool) -> None:
    assert evaluate(source, {"result": VALUES}) is expected


def test_equal_shapes_are_equal() -> None:
    """The positive control: the same JSON in two places is equal (1 and 1.0 included)."""
    values = {"a": [1, {"x": [None, True]}], "b": [1.0, {"x": [None, True]}]}
    assert evaluate("result.a == result.b", {"result": values}) is True


def test_membership_uses_the_same_equality() -> None:
    ctx = {"result": {"hay": [[1, 2], {"a": 1, "b": 2}, True], "one": [1], "obj_a": {"a": 1}}}
    assert evaluate("result.one in result.hay", ctx) is False
    assert evaluate("result.obj_a in result.hay", ctx) is False
    assert evaluate("1 in result.hay", ctx) is False
