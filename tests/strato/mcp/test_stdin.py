"""`strato.mcp.stdin.prune`: a line cut down below a depth is still the same JSON down to
that depth, with `null` in place of each container past it, and a shallow line is kept
byte for byte."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from strato.mcp.stdin import prune

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab[]{}"\\,: \u00e9', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="k[{\"", max_size=3), inner, max_size=3),
    max_leaves=40,
)


def cut(value: Any, keep: int) -> Any:
    """``value`` with every container below depth ``keep`` as None (the reference)."""
    if not isinstance(value, list | dict):
        return value
    if keep == 0:
        return None
    if isinstance(value, dict):
        return {k: cut(v, keep - 1) for k, v in value.items()}
    return [cut(v, keep - 1) for v in value]


@given(JSON, st.integers(min_value=0, max_value=6), st.booleans())
def test_a_pruned_line_is_the_value_cut_at_that_depth(value: Any, keep: int, spaced: bool) -> None:
    line = json.dumps(value, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":"))
    assert json.loads(prune(line, keep)) == cut(value, keep)


@given(JSON)
def test_a_line_no_deeper_than_the_bound_is_kept_as_it_is(value: Any) -> None:
    line = json.dumps(value)
    assert prune(line, 10) == line


def test_a_line_far_deeper_than_any_parser_goes_comes_out_shallow() -> None:
    levels = 200_000
    line = '{"id": 7, "params": {"a": ' + "[" * levels + "1" + "]" * levels + "}}\n"
    assert json.loads(prune(line, 3)) == {"id": 7, "params": {"a": [None]}}
    assert prune("[" * 500, 3) == "[[[null"  # still open at its end: not JSON, as it was
