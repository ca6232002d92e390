"""JSON values with JavaScript's semantics, function by function: the normalised
numbers, truthiness and number text that every expression result goes through (written
against what mutation testing left alive, docs/testing.md)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from strato.flow.expr.errors import ExprError
from strato.flow.expr.values import (
    SAFE_INT,
    check_binding,
    display,
    number,
    number_text,
    to_json,
    truthy,
)


@pytest.mark.parametrize(("value", "expected"), [
    (7, 7), (-SAFE_INT, -SAFE_INT), (SAFE_INT, SAFE_INT),
    (4.0, 4), (-4.0, -4), (float(SAFE_INT), SAFE_INT), (2.5, 2.5),
    (SAFE_INT * 4, float(SAFE_INT * 4)), (-SAFE_INT * 4, float(-SAFE_INT * 4)),
    (float(SAFE_INT * 4), float(SAFE_INT * 4)),
])
def test_numbers_are_integers_exactly_within_two_to_the_53(value: float,
                                                          expected: float) -> None:
    """Integral results up to 2**53 are ints (they print without `.0`); beyond it a
    number is a float, as in JavaScript, where no integer type exists."""
    result = number(value)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_non_finite_result_is_a_typed_error(value: float) -> None:
    with pytest.raises(ExprError) as info:
        number(value)
    assert (info.value.kind, info.value.message) == (
        "type_error", "arithmetic result is not a finite number")


@pytest.mark.parametrize(("value", "expected"), [
    (None, False), (False, False), (0, False), (0.0, False), (-0.0, False),
    (math.nan, False), ("", False), ([], False), ({}, False),
    (True, True), (1, True), (-1, True), (0.5, True), (-0.5, True), (math.inf, True),
    ("0", True), ("false", True), ([0], True), ([None], True), ({"a": None}, True),
])
def test_truthiness_is_javascripts(value: Any, expected: bool) -> None:
    assert truthy(value) is expected


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (-3, "-3"), (10**20, "100000000000000000000"),
    (10**20 + 1, "100000000000000000001"), (10**21, "1e+21"), (-10**21, "-1e+21"),
    (10**22, "1e+22"),
    (1.0, "1"), (-0.0, "0"), (2.5, "2.5"), (-2.5, "-2.5"), (1e20, "100000000000000000000"),
    (1e21, "1e+21"), (-1e21, "-1e+21"), (1.5e300, "1.5e+300"), (1e-7, "1e-7"),
    (-1e-7, "-1e-7"), (1.5e-7, "1.5e-7"), (1.25e-10, "1.25e-10"),
    # Positional down to 1e-6, where Python's repr turns to exponents at 1e-5 already.
    (1e-5, "0.00001"), (1e-6, "0.000001"), (-1.5e-6, "-0.0000015"), (0.000123, "0.000123"),
    (1.2e21, "1.2e+21"), (123.456, "123.456"), (1 / 3, "0.3333333333333333"),
    (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (12345678901234567890.0, "12345678901234567000"),
    (math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity"),
])
def test_numbers_print_as_javascripts_string_does(value: float, text: str) -> None:
    """Integral values below 1e21 in full; from 1e21 (and below 1e-6) the exponent form
    with an explicit sign and no leading zeros (`1e-7`, not `1e-07`). Every expected text
    here is what Node's String() printed for the same double."""
    assert number_text(value) == text


def test_json_text_may_be_exactly_as_long_as_its_limit_and_not_one_character_more() -> None:
    assert to_json([1, 2], 5) == "[1,2]"
    assert to_json([1, 2]) == "[1,2]"
    for limit in (0, 1, 2, 3, 4):
        with pytest.raises(ExprError) as info:
            to_json([1, 2], limit)
        assert (info.value.kind, info.value.message) == (
            "resource_limit", f"text longer than {limit} characters")


@pytest.mark.parametrize(("value", "text"), [
    (True, "true"), (False, "false"), (None, "null"), ("é\u2028", '"é\u2028"'),
    ({"é": 1, "b": [True, None]}, '{"é":1,"b":[true,null]}'), ({}, "{}"), ([], "[]"),
])
def test_json_text_is_compact_and_keeps_non_ascii_as_is(value: Any, text: str) -> None:
    """JSON.stringify's text: no spaces, booleans as words, non-ASCII unescaped."""
    assert to_json(value) == text


def test_display_is_strings_as_they_are_and_the_rest_as_bounded_json() -> None:
    """String(x): a string is its own text (never quoted, never cut), anything else is
    JSON text under the same limit as `to_json`."""
    assert display("a\"b" * 10, 3) == "a\"b" * 10
    assert display([1, "a"]) == '[1,"a"]'
    assert display(None, 4) == "null"
    with pytest.raises(ExprError) as info:
        display(["x" * 10], 5)
    assert (info.value.kind, info.value.message) == (
        "resource_limit", "text longer than 5 characters")


@pytest.mark.parametrize("value", [10**400, -10**400, 2**1024], ids=["1e400", "-1e400", "2**1024"])
def test_an_integer_past_the_largest_double_is_not_finite_not_a_crash(value: int) -> None:
    """JavaScript holds such a number as Infinity; Python's float() raises OverflowError,
    which must not escape the evaluator as anything but its typed error."""
    with pytest.raises(ExprError) as info:
        number(value)
    assert (info.value.kind, info.value.message) == (
        "type_error", "arithmetic result is not a finite number")
    assert number_text(value) == ("Infinity" if value > 0 else "-Infinity")


def _refusal(value: Any, name: str = "result") -> tuple[str, str]:
    with pytest.raises(ExprError) as info:
        check_binding(value, name)
    return info.value.kind, info.value.message


def _nested(depth: int, inner: Any) -> Any:
    value = inner
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize("inner", [[], [1], {}, {"k": None}], ids=["empty", "scalar", "{}", "{k}"])
def test_a_binding_may_nest_128_containers_deep_and_not_one_more(inner: Any) -> None:
    check_binding(_nested(128, inner), "result")
    assert _refusal(_nested(129, inner), "input") == (
        "resource_limit", "binding 'input' nests deeper than 128")


def test_a_binding_may_expand_to_a_million_values_and_not_one_more() -> None:
    """The count is of the expanded tree: a shared sub-list counts once per place."""
    check_binding([0] * 999_999, "result")  # with the list itself: 1,000,000 values
    too_many = ("resource_limit", "binding 'item' expands to more than 1,000,000 values")
    assert _refusal([0] * 1_000_000, "item") == too_many
    row = [0] * 999  # 1,000 values
    check_binding([row] * 999, "item")  # 999,001 values
    assert _refusal([row] * 1000, "item") == too_many
    assert _refusal({"a": [row] * 500, "b": [row] * 500}, "item") == too_many


def test_every_value_of_a_binding_is_checked_past_shared_containers_and_into_objects() -> None:
    shared = [1]
    assert _refusal([math.nan, shared, shared]) == (
        "validation_error", "binding 'result' holds a non-finite number")
    assert _refusal({"k": {"deep": [object()]}}, "prev") == (
        "validation_error", "binding 'prev' is not JSON (object)")
    assert _refusal({"k": math.inf}) == (
        "validation_error", "binding 'result' holds a non-finite number")
    assert _refusal({1: "a"}) == ("validation_error", "binding 'result' has a non-string key")
    assert _refusal((1,)) == ("validation_error", "binding 'result' is not JSON (tuple)")


def test_a_binding_that_contains_itself_is_refused() -> None:
    loop: list[Any] = [1]
    loop.append({"again": loop})
    assert _refusal(loop) == ("resource_limit", "binding 'result' contains a cycle")
    assert _refusal({"a": {"b": [loop]}}, "input") == (
        "resource_limit", "binding 'input' contains a cycle")
