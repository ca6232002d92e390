"""The expression language: grammar, JSON semantics, builtins, limits, typed errors."""

from __future__ import annotations

from typing import Any

import pytest

from strato.flow.expr.errors import ExprError
from strato.flow.expr.evaluator import evaluate, evaluate_predicate

CTX: dict[str, Any] = {
    "result": {
        "label": "pos",
        "confidence": 0.9,
        "tags": ["a", "b"],
        "n": 3,
        "ok": True,
        "nested": {"k": [1, {"z": None}]},
        "empty": [],
    },
    "input": {"text": "héllo wörld", "limit": 2},
}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("true != 1", True),
        ("1 == 1.0", True),
        ("false == 0", False),
        ("null == false", False),
        ("'' == false", False),
        ("result.tags == result.tags", True),
        ("result.nested == result.nested", True),
        ("result.label != ''", True),
        ("result.confidence > 0.7", True),
        ("result.n * 2 + 1", 7),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 4 - 3", 3),
        ("7 / 2", 3.5),
        ("-result.n", -3),
        ("!result.ok", False),
        ("true || 1 / 0 == 1", True),
        ("false && 1 / 0 == 1", False),
        ("1 < 2 == true", True),
        ("'b' > 'a'", True),
        ("'a' in result.tags", True),
        ("'c' in result.tags", False),
        ("'ll' in input.text", True),
        ("'label' in result", True),
        ("'constructor' in result", False),
        ("result.nested.k[1].z", None),
        ("result.nested.k[9]", None),
        ("result.missing", None),
        ("result.__class__", None),
        ("len(input.text)", 11),
        ("len(result.tags)", 2),
        ("len(result)", 7),
        ("any(result.tags)", True),
        ("all(result.empty)", True),
        ("any(result.empty)", False),
        ("max(result.tags)", "b"),
        ("min(result.tags)", "a"),
        ("str(1.0)", "1"),
        ("str(0.5)", "0.5"),
        ("str(null)", "null"),
        ("str(result.tags)", '["a","b"]'),
        ("str(result.nested)", '{"k":[1,{"z":null}]}'),
        ("int('-42')", -42),
        ("int(3.99)", 3),
        ("int(-3.99)", -3),
        ("int(true)", 1),
        ("bool(0)", False),
        ("bool(result.empty)", False),
        ("bool('x')", True),
        ("matches(result.label, '^p.s$')", True),
        ("matches('v1.22', '\\\\d+\\\\.\\\\d')", True),
        ("'\\u00e9' in input.text", True),
        ("'a\\nb' == \"a\\nb\"", True),
        ("1e3 == 1000", True),
    ],
)
def test_values(source: str, expected: Any) -> None:
    assert evaluate(source, CTX) == expected
    assert type(evaluate(source, CTX)) is type(expected)


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("result.", "parse_error"),
        ("1 +", "parse_error"),
        ("[1, 2]", "parse_error"),
        ("result.tags[-1]", "parse_error"),
        ("result.tags[0.5]", "parse_error"),
        ("'unterminated", "parse_error"),
        ("'bad \\q escape'", "parse_error"),
        ("'raw\ncontrol'", "parse_error"),
        ("01", "parse_error"),
        ("1e999", "parse_error"),
        ("result @ 1", "parse_error"),
        ("a = 1", "parse_error"),
        ("lambda", "unknown_identifier"),
        ("__import__", "unknown_identifier"),
        ("item", "unknown_identifier"),
        ("eval('1')", "unknown_function"),
        ("result.__class__.__mro__", "type_error"),
        ("result.constructor", "validation_error"),
        ("result['__proto__']", "parse_error"),
        ("result.prototype", "validation_error"),
        ("len(1, 2)", "type_error"),
        ("len()", "type_error"),
        ("len(1)", "type_error"),
        ("!1", "type_error"),
        ("1 && true", "type_error"),
        ("false || 1", "type_error"),
        ("'a' + 1", "type_error"),
        ("'a' - 'b'", "type_error"),
        ("1 < 'a'", "type_error"),
        ("null < 1", "type_error"),
        ("1 / 0", "type_error"),
        ("1 in 2", "type_error"),
        ("1 in 'abc'", "type_error"),
        ("max(result.empty)", "type_error"),
        ("max(result.nested.k)", "type_error"),
        ("int('1.5')", "type_error"),
        ("int(null)", "type_error"),
        ("result.n.x", "type_error"),
        ("result.label[0]", "type_error"),
        ("1e308 * 10", "type_error"),
        ("matches(result.label, '(a+)+$')", "validation_error"),
        ("matches(1, 'a')", "type_error"),
        ("file_exists('x')", "validation_error"),
    ],
)
def test_typed_errors(source: str, kind: str) -> None:
    with pytest.raises(ExprError) as info:
        evaluate(source, CTX)
    assert info.value.kind == kind
    assert str(info.value).startswith(f"{kind}: ")


def test_predicate_must_be_boolean() -> None:
    assert evaluate_predicate("result.n == 3", CTX) is True
    with pytest.raises(ExprError) as info:
        evaluate_predicate("result.n", CTX)
    assert info.value.kind == "type_error"


@pytest.mark.parametrize(
    "source",
    [
        "(" * 129 + "1" + ")" * 129,
        "!" * 200 + "true",
        "-" * 200 + "1",
        "1" + " + 1" * 200,
        "result" + ".a" * 200,
        "len(" * 130 + "1" + ")" * 130,
    ],
)
def test_nesting_limit(source: str) -> None:
    with pytest.raises(ExprError) as info:
        evaluate(source, CTX)
    assert info.value.kind == "resource_limit"


def test_nesting_just_under_the_limit_evaluates() -> None:
    assert evaluate("(" * 120 + "1" + ")" * 120, {}) == 1
    assert evaluate("1" + " + 1" * 100, {}) == 101


def _balanced(depth: int) -> str:
    """A shallow, wide tree of 2**(depth+1) - 1 nodes."""
    return "true" if depth == 0 else f"({_balanced(depth - 1)} && {_balanced(depth - 1)})"


def test_node_limit() -> None:
    assert evaluate(_balanced(11), {}) is True  # 4095 nodes: within the limit
    with pytest.raises(ExprError) as info:
        evaluate(_balanced(12), {})  # 8191 nodes, height 13
    assert info.value.kind == "resource_limit"
    assert "nodes" in info.value.message


def test_source_size_limit() -> None:
    with pytest.raises(ExprError) as info:
        evaluate("'" + "x" * 70000 + "'", {})
    assert info.value.kind == "resource_limit"


def test_binding_limits() -> None:
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ExprError) as info:
        evaluate("1", {"result": deep})
    assert info.value.kind == "resource_limit"
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ExprError) as info:
        evaluate("1", {"result": cyclic})
    assert info.value.kind == "resource_limit"
    shared: list[Any] = [1]
    for _ in range(10):  # shared sub-objects are still JSON
        shared = [shared, shared]
    assert evaluate("str(result) == str(input)", {"result": shared, "input": shared}) is True
    for _ in range(50):  # 2**60 leaves once expanded: refused before any walk
        shared = [shared, shared]
    with pytest.raises(ExprError) as info:
        evaluate("result == input", {"result": shared, "input": shared})
    assert info.value.kind == "resource_limit"
    with pytest.raises(ExprError) as info:
        evaluate("1", {"result": object()})
    assert info.value.kind == "validation_error"
    with pytest.raises(ExprError) as info:
        evaluate("1", {"self": 1})
    assert info.value.kind == "validation_error"


def test_huge_strings_are_bounded() -> None:
    big = "x" * (1 << 20)
    with pytest.raises(ExprError) as info:
        evaluate("str(result)", {"result": [big] * 500})  # would be 500 MiB of JSON
    assert info.value.kind == "resource_limit"
    assert evaluate("len(result)", {"result": big}) == 1 << 20
    with pytest.raises(ExprError) as info:
        evaluate("result + result", {"result": big})
    assert info.value.kind == "resource_limit"
    with pytest.raises(ExprError) as info:
        evaluate("matches(result, 'x')", {"result": big})
    assert info.value.kind == "resource_limit"


def test_huge_numbers_stay_finite_or_fail_typed() -> None:
    assert evaluate("9007199254740993 > 1", {}) is True
    assert evaluate("int('" + "9" * 300 + "') > 1", {}) is True
    with pytest.raises(ExprError) as info:
        evaluate("int('" + "9" * 500 + "')", {})
    assert info.value.kind == "resource_limit"
    with pytest.raises(ExprError) as info:
        evaluate("1" + "0" * 400 + " > 1", {})
    assert info.value.kind == "parse_error"


def test_no_python_object_is_reachable() -> None:
    # attribute-like walks are JSON key lookups, never getattr
    for source in ("result.__class__", "result.__dict__", "result.keys", "input.__globals__"):
        assert evaluate(source, CTX) is None
    assert evaluate("result.tags.__len__", {"result": {"tags": {}}}) is None
