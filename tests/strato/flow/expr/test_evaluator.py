"""The evaluator's builtins and predicates at the edges the flow suite reaches only
through whole runs: min/max, file predicates inside a workspace, typed errors with the
messages a spec author reads (written against mutation survivors, docs/testing.md)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

from strato.flow.expr.errors import ExprError
from strato.flow.expr.evaluator import evaluate, evaluate_predicate


def _error(source: str, context: dict[str, Any], root: Path | None = None) -> ExprError:
    with pytest.raises(ExprError) as info:
        evaluate(source, context, root)
    return info.value


@pytest.mark.parametrize(("items", "low", "high"), [
    ([3, 1, 2], 1, 3), ([-1.5, 2, 0], -1.5, 2), ([7], 7, 7), (["b", "c", "a"], "a", "c"),
    (["\uffff", "\U0001f600"], "\U0001f600", "\uffff"),  # JavaScript's UTF-16 order
])
def test_min_and_max_pick_from_numbers_or_strings(items: list[Any], low: Any,
                                                  high: Any) -> None:
    assert evaluate("min(input.v)", {"input": {"v": items}}) == low
    assert evaluate("max(input.v)", {"input": {"v": items}}) == high


@pytest.mark.parametrize("items", [[], [1, "a"], [True, False], [None], [[1]]])
def test_min_and_max_refuse_empty_or_mixed_arrays(items: list[Any]) -> None:
    for fn in ("min", "max"):
        error = _error(f"{fn}(input.v)", {"input": {"v": items}})
        assert (error.kind, error.message) == (
            "type_error", f"{fn}() needs a non-empty array of numbers or of strings")


def test_min_and_max_of_a_non_array_name_what_they_got() -> None:
    error = _error("max(input.v)", {"input": {"v": 3}})
    assert (error.kind, error.message) == ("type_error", "max() needs an array, got number")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("the gate is open\n")
    (tmp_path / "dir").mkdir()
    return tmp_path


def test_file_predicates_read_inside_the_workspace_root(workspace: Path) -> None:
    assert evaluate_predicate("file_exists('notes.txt')", {}, workspace) is True
    assert evaluate_predicate("file_exists('missing.txt')", {}, workspace) is False
    assert evaluate_predicate("file_exists('dir')", {}, workspace) is False
    assert evaluate_predicate("file_contains('notes.txt', 'gate is')", {}, workspace) is True
    assert evaluate_predicate("file_contains('notes.txt', 'closed')", {}, workspace) is False
    assert evaluate_predicate("file_contains('missing.txt', 'x')", {}, workspace) is False
    assert evaluate_predicate("file_exists(input.p)", {"input": {"p": "notes.txt"}},
                              str(workspace)) is True


@pytest.mark.parametrize(("source", "message"), [
    ("file_exists(1)", "file_exists() needs a string path, got number"),
    ("file_exists(null)", "file_exists() needs a string path, got null"),
    ("file_contains(input.paths, 'x')", "file_contains() needs a string path, got array"),
    ("file_contains('notes.txt', 1)", "file_contains() needs a string text"),
])
def test_file_predicates_with_wrong_arguments_are_typed_errors(workspace: Path, source: str,
                                                               message: str) -> None:
    error = _error(source, {"input": {"paths": ["notes.txt"]}}, workspace)
    assert (error.kind, error.message) == ("type_error", message)


@pytest.mark.parametrize(("source", "shown"), [
    ("1", "number"), ("'yes'", "string"), ("null", "null"), ("input.v", "array"),
])
def test_a_predicate_that_is_not_a_boolean_names_what_it_yielded(source: str,
                                                                 shown: str) -> None:
    with pytest.raises(ExprError) as info:
        evaluate_predicate(source, {"input": {"v": [True]}})
    assert (info.value.kind, info.value.message) == (
        "type_error", f"predicate yielded {shown}, not a boolean")


@pytest.mark.parametrize(("source", "value"), [
    ("!true", False), ("!false", True), ("!!true", True), ("-input.n", -2),
    ("-input.x", 2.5), ("--input.n", 2), ("-0", 0),
])
def test_not_and_unary_minus_compute(source: str, value: Any) -> None:
    result = evaluate(source, {"input": {"n": 2, "x": -2.5}})
    assert result == value
    assert type(result) is type(value)


@pytest.mark.parametrize(("source", "message"), [
    ("!1", "'!' needs booleans, got number"),
    ("!null", "'!' needs booleans, got null"),
    ("!'true'", "'!' needs booleans, got string"),
    ("-true", "unary '-' needs a number, got boolean"),
    ("-'1'", "unary '-' needs a number, got string"),
    ("-input.v", "unary '-' needs a number, got array"),
    ("-null", "unary '-' needs a number, got null"),
])
def test_not_and_unary_minus_of_the_wrong_type_name_what_they_got(source: str,
                                                                  message: str) -> None:
    error = _error(source, {"input": {"v": [1]}})
    assert (error.kind, error.message) == ("type_error", message)


def test_int_of_a_string_reads_up_to_400_characters_and_refuses_one_more() -> None:
    """The bound keeps int() of a huge digit string from costing quadratic time; it
    counts characters, sign and leading zeros included."""
    assert evaluate("int(input.s)", {"input": {"s": "+" + "0" * 398 + "7"}}) == 7
    assert evaluate("int(input.s)", {"input": {"s": "-" + "0" * 398 + "7"}}) == -7
    error = _error("int(input.s)", {"input": {"s": "0" * 400 + "7"}})
    assert (error.kind, error.message) == (
        "resource_limit", "int() of a string longer than 400 characters")


@pytest.mark.parametrize(("value", "message"), [
    (None, "int() cannot convert null 'null'"),
    ("1.5", "int() cannot convert string '1.5'"),
    (" 7", "int() cannot convert string ' 7'"),
    ([1, 2], "int() cannot convert array '[1,2]'"),
    ("x" * 50, f"int() cannot convert string {'x' * 40!r}"),
])
def test_int_of_what_is_not_an_integer_shows_the_first_40_characters(value: Any,
                                                                     message: str) -> None:
    error = _error("int(input.v)", {"input": {"v": value}})
    assert (error.kind, error.message) == ("type_error", message)


@pytest.mark.parametrize(("source", "n"), [
    ("int(input.s)", 0), ("-input.n", 10**400), ("input.n * input.n", 10**200),
    ("input.n + 1", 10**400), ("input.n - 1", -10**400),
], ids=["int-of-309-nines", "minus", "times", "plus", "minus-one"])
def test_arithmetic_past_the_largest_double_is_a_typed_error(source: str, n: int) -> None:
    """`int('9' * 309)` and integer bindings too large for a double once escaped as
    Python's OverflowError instead of an ExprError."""
    error = _error(source, {"input": {"s": "9" * 309, "n": n}})
    assert (error.kind, error.message) == (
        "type_error", "arithmetic result is not a finite number")
    assert evaluate("str(input.n)", {"input": {"n": 10**400}}) == "Infinity"


@pytest.mark.parametrize(("left", "right", "lt", "le", "gt", "ge"), [
    ("1", "2", True, True, False, False), ("2", "2", False, True, False, True),
    ("2.5", "2", False, False, True, True), ("'a'", "'b'", True, True, False, False),
    ("'b'", "'b'", False, True, False, True), ("'b'", "'ab'", False, False, True, True),
])
def test_the_four_orderings_at_below_equal_and_above(left: str, right: str, lt: bool,
                                                     le: bool, gt: bool, ge: bool) -> None:
    got = [evaluate(f"{left} {op} {right}", {}) for op in ("<", "<=", ">", ">=")]
    assert got == [lt, le, gt, ge]


@pytest.mark.parametrize(("source", "message"), [
    ("1 < 'a'", "'<' needs two numbers or two strings, got number and string"),
    ("'a' >= null", "'>=' needs two numbers or two strings, got string and null"),
    ("input.o <= input.o", "'<=' needs two numbers or two strings, got object and object"),
    ("1 in 'abc'", "'in' string needs a string needle"),
    ("1 in input.o", "'in' object needs a string needle"),
    ("'a' in 2", "'in' needs an array, string or object, got number"),
    ("'a' in null", "'in' needs an array, string or object, got null"),
    ("len(1)", "len() needs a string, array or object, got number"),
    ("len(true)", "len() needs a string, array or object, got boolean"),
    ("-input.o", "unary '-' needs a number, got object"),
    ("matches(1, 'a')", "matches() needs a string text and a string pattern"),
    ("matches('a', null)", "matches() needs a string text and a string pattern"),
])
def test_operators_and_builtins_name_the_types_they_got(source: str, message: str) -> None:
    error = _error(source, {"input": {"o": {}}})
    assert (error.kind, error.message) == ("type_error", message)


def test_a_string_result_may_be_exactly_1_mib_and_not_one_character_more() -> None:
    mib = "x" * (1 << 20)
    assert len(evaluate("result + ''", {"result": mib})) == 1 << 20
    assert evaluate("str(result) == result", {"result": mib}) is True
    error = _error("result + 'y'", {"result": mib})
    assert (error.kind, error.message) == ("resource_limit", "string result longer than 1 MiB")
    error = _error("str(result)", {"result": [mib[:-3]]})  # JSON adds 4: two quotes, [ ]
    assert (error.kind, error.message) == (
        "resource_limit", f"text longer than {1 << 20} characters")
    assert len(evaluate("str(result)", {"result": [mib[:-4]]})) == 1 << 20


def test_matches_reads_up_to_4096_characters_and_refuses_one_more() -> None:
    text = "a" * 4096
    assert evaluate("matches(result, 'a$')", {"result": text}) is True
    error = _error("matches(result, 'a$')", {"result": text + "a"})
    assert (error.kind, error.message) == ("resource_limit", "matches() input longer than 4096")


def test_a_lone_surrogate_is_one_utf16_unit_to_len_and_order() -> None:
    """JSON text may hold a lone surrogate (`"\\ud800"`); JavaScript counts and orders it
    as one code unit, and encoding it as UTF-16 must not fail."""
    assert evaluate("len(result)", {"result": "a\ud800"}) == 2
    assert evaluate("result < '\uffff'", {"result": "\ud800"}) is True
    assert evaluate("max(input.v)", {"input": {"v": ["\ud800", "\ue000"]}}) == "\ue000"


@pytest.mark.parametrize(("source", "context", "kind", "message"), [
    (1, {}, "validation_error", "expression must be a string"),
    ("1", {"self": 1}, "validation_error",
     "'self' cannot be bound (only ['input', 'item', 'prev', 'result'])"),
    ("1", {"input": {"k": [math.nan]}}, "validation_error",
     "binding 'input' holds a non-finite number"),
    ("item", {}, "unknown_identifier", "'item' is not bound here"),
    ("input.n.x", {"input": {"n": 1}}, "type_error", ".x on number"),
    ("input.s[0]", {"input": {"s": "abc"}}, "type_error", "[0] on string"),
    ("1 && true", {}, "type_error", "'&&' needs booleans, got number"),
    ("true && 'x'", {}, "type_error", "'&&' needs booleans, got string"),
    ("null || true", {}, "type_error", "'||' needs booleans, got null"),
    ("false || 1", {}, "type_error", "'||' needs booleans, got number"),
    ("'a' - 'b'", {}, "type_error", "'-' needs numbers, got string and string"),
    ("1 * null", {}, "type_error", "'*' needs numbers, got number and null"),
    ("input.s + 1", {"input": {"s": "a"}}, "type_error", "'+' needs numbers, got string and number"),
    ("1 / 0", {}, "type_error", "division by zero"),
])
def test_evaluation_errors_say_what_went_wrong(source: Any, context: dict[str, Any], kind: str,
                                               message: str) -> None:
    with pytest.raises(ExprError) as info:
        evaluate(source, context)
    assert (info.value.kind, info.value.message) == (kind, message)


def test_values_concatenate_compare_and_index_past_the_end() -> None:
    context = {"input": {"v": [1, 2], "a": [1], "b": [1]}}
    assert evaluate("'a' + 'b'", {}) == "ab"
    assert evaluate("input.v[1]", context) == 2
    assert evaluate("input.v[2]", context) is None
    assert evaluate("input.a != input.b", context) is False
    assert evaluate("input.a != input.v", context) is True


def test_a_stack_too_deep_for_the_expression_is_a_resource_limit_not_a_recursion_error() -> None:
    """Evaluation recurses once per nesting level; called with little stack left (as
    from deep inside a caller), evaluation still fails with the language's own error."""
    def deep(n: int) -> ExprError:
        return deep(n - 1) if n else _error("(" * 100 + "1" + ")" * 100, {})

    error = deep(sys.getrecursionlimit() - 60)
    assert (error.kind, error.message) == ("resource_limit", "expression nests too deeply")


def test_an_integer_a_binding_holds_past_2_53_stays_exact() -> None:
    """The deliberate difference from Stratum's JavaScript in docs/flows.md: the value the
    user wrote, not its nearest double (JavaScript says `true` here)."""
    big = {"input": {"a": 2**53 + 1, "b": 2**53}}
    assert evaluate("input.a == input.b", big) is False
    assert evaluate("input.a - input.b", big) == 1
