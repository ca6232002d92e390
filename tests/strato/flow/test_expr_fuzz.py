"""Hypothesis campaign: random and mutated expressions over random JSON bindings never
raise anything but ExprError, and every value they return is plain JSON."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, get_args

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.flow.expr.errors import ExprError, ExprErrorKind
from strato.flow.expr.evaluator import evaluate
from strato.flow.expr.values import is_number

SEEDS = [
    "result.label != ''",
    "result.confidence > 0.7 && len(result.tags) >= 1",
    "'a' in result.tags || !(input.n == 2)",
    "max(result.nums) - min(result.nums) / 2",
    "str(result) + str(input.n * -3.5e2)",
    "int('12') + int(true) == 13",
    "matches(result.label, '^[a-z]+\\\\d?$')",
    "file_exists('a.txt') && file_contains('a.txt', 'hi')",
    "bool(result.nested.k[0]) == any(result.tags)",
    "result.__class__ == null",
]
TOKENS = [
    "(",
    ")",
    "[",
    "]",
    ".",
    ",",
    "!",
    "-",
    "+",
    "*",
    "/",
    "==",
    "!=",
    "<",
    ">=",
    "&&",
    "||",
    " in ",
    "'",
    '"',
    "\\",
    "0",
    "1e308",
    "9" * 30,
    "result",
    "input",
    "item",
    "len(",
    "matches(",
    "file_exists(",
    "__proto__",
    "constructor",
    "'..'",
    "'/etc/passwd'",
    "'(a+)+$'",
    "null",
    "true",
    " ",
]

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
BINDINGS = st.fixed_dictionaries(
    {"result": JSON, "input": JSON},
    optional={"item": JSON, "prev": JSON},
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        token = draw(st.sampled_from(TOKENS))
        if op == "insert":
            text = text[:pos] + token + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 5)) :]
        elif op == "replace":
            text = text[:pos] + token + text[pos + len(token) :]
        else:
            text = text[:pos] + text[pos:] + text[pos:]
    return text


def assert_json(value: Any, depth: int = 0) -> None:
    assert depth < 200
    if isinstance(value, list):
        for v in value:
            assert_json(v, depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str)
            assert_json(v, depth + 1)
    elif is_number(value):
        assert math.isfinite(value)
    else:
        assert value is None or isinstance(value, bool | str)


def run(source: str, bindings: dict[str, Any], root: Path) -> None:
    try:
        value = evaluate(source, bindings, root)
    except ExprError as exc:
        assert exc.kind in get_args(ExprErrorKind)
        assert "Traceback" not in exc.message
        return
    assert_json(value)


FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(source=st.lists(st.sampled_from(TOKENS), max_size=25).map("".join), bindings=BINDINGS)
def test_random_token_soup(source: str, bindings: dict[str, Any], tmp_path: Path) -> None:
    run(source, bindings, tmp_path)


@FUZZ
@given(source=st.text(max_size=60), bindings=BINDINGS)
def test_random_unicode(source: str, bindings: dict[str, Any], tmp_path: Path) -> None:
    run(source, bindings, tmp_path)


@FUZZ
@given(source=mutated(), bindings=BINDINGS)
def test_mutated_seeds(source: str, bindings: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hi")
    run(source, bindings, tmp_path)


@FUZZ
@given(
    pattern=st.text(alphabet=st.sampled_from(list("ab()[]{}|*+?.^$\\-,0123dwsbu")), max_size=24),
    text=st.text(alphabet="ab01 -", max_size=40),
)
def test_random_regexes(pattern: str, text: str, tmp_path: Path) -> None:
    run("matches(result, input)", {"result": text, "input": pattern}, tmp_path)
