"""`matches()` patterns: pathological shapes are refused before anything runs; the
accepted subset matches like a real regex engine (differential test against `re`)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strato.flow.expr.errors import ExprError
from strato.flow.expr.regex import check_shape, compile_pattern, search

PATHOLOGICAL = [
    "(a+)+$",
    "(a*)*b",
    "(a|a)*$",
    "(a|aa)+$",
    "(.*a){12}",
    "(\\w+\\s?)+$",
    "^(([a-z])+.)+[A-Z]([a-z])+$",
    "(x+x+)+y",
    "a*a*a*a*b",
    "\\d+\\d+$",
    "(a+){2,}",
    "(?:a+)+",
    "(?=a)a",
    "(a)\\1",
    "a" * 257,
    "a?" * 33,
    "a**",
    "a{2}{3}",
    "(abc",
    "abc)",
    "[abc",
    "*a",
    "a{99999}",
    "\\p{L}",
]


@pytest.mark.parametrize("pattern", PATHOLOGICAL)
def test_pathological_patterns_are_refused_by_shape(pattern: str) -> None:
    with pytest.raises(ExprError) as info:
        check_shape(pattern)
    assert info.value.kind in ("validation_error", "resource_limit")
    # the refusal happens before compilation, so no program exists for it
    with pytest.raises(ExprError):
        compile_pattern(pattern)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("abc", "xxabcxx", True),
        ("^abc$", "abc", True),
        ("^abc$", "abc\n", False),
        ("a+b", "caaab", True),
        ("^[a-z]+$", "Hello", False),
        ("\\d{3}-\\d{4}", "call 555-1234", True),
        ("colou?r", "color", True),
        ("(ab)+c", "ababc", True),
        ("^(foo|bar)$", "baz", False),
        ("\\bcat\\b", "a cat!", True),
        ("\\bcat\\b", "concat", False),
        ("[^0-9]", "123", False),
        ("a.c", "a\nc", False),
        ("\\u00e9", "café", True),
        ("^$", "", True),
        ("\\s", "a\u00a0b", True),
        ("\\d", "\u0663", False),  # ASCII digits only, as with JavaScript's u flag
    ],
)
def test_matcher_semantics(pattern: str, text: str, expected: bool) -> None:
    assert search(pattern, text) is expected


def test_polynomial_shapes_run_in_linear_passes() -> None:
    # accepted by the filter; a backtracking engine would need ~n**4 steps here
    assert search(".*a.*b.*c.*d", "a" * 4096) is False


_ATOMS = st.sampled_from(["a", "b", "c", "[ab]", "[^a]", "(ab)", "(a|bc)", "."])
_QUANTS = st.sampled_from(["", "", "*", "+", "?", "{1,2}", "{2}"])


@st.composite
def simple_patterns(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(_ATOMS, _QUANTS), min_size=1, max_size=6))
    body = "".join(atom + quant for atom, quant in parts)
    return draw(st.sampled_from(["", "^"])) + body + draw(st.sampled_from(["", "$"]))


@settings(max_examples=400, deadline=None)
@given(simple_patterns(), st.text(alphabet="abcd", max_size=12))
def test_matcher_agrees_with_re_on_the_accepted_subset(pattern: str, text: str) -> None:
    try:
        check_shape(pattern)
    except ExprError:
        return  # refused shapes are covered above
    assert search(pattern, text) == (re.search(pattern, text) is not None)
