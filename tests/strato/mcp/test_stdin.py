"""`strato.mcp.stdin.prune`: a line cut down below a depth is still the same JSON down to
that depth, with `null` in place of each container past it, and a shallow line is kept
byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from strato.mcp.stdin import prune
from tests.support.mcp import Wire

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


def reference(line: str, keep: int) -> str:
    """The pruner as the obvious character-by-character scan (the specification): a
    string runs to its closing quote or, left open, to the end of the line."""
    out: list[str] = []
    level, in_string, escaped, cut = 0, False, False, False
    for char in line:
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            if level == keep + 1 and not cut:
                out.append("null")
                cut = True
        elif char in "]}":
            level -= 1
            if level == keep and cut:
                cut = False
                continue
        if not cut:
            out.append(char)
    return "".join(out)


@given(st.text(alphabet='[]{}"\\ a\n\u00e9', max_size=60), st.integers(min_value=0, max_value=4))
def test_any_line_well_formed_or_not_is_pruned_as_the_scan_says(line: str, keep: int) -> None:
    assert prune(line, keep) == reference(line, keep)


def test_a_string_left_open_hides_the_brackets_after_it() -> None:
    # the quadratic shape of reproduction 8: one `"`, then escaped quotes to the end
    line = "[[[[" + '"' + '\\"[' * 50_000
    assert prune(line, 3) == "[[[null"
    assert prune('[["[[[", [[1]]]', 2) == '[["[[[", null]'


def test_a_mebibyte_malformed_line_is_dropped_and_the_next_request_answered(workspace: Path) -> None:
    """Reproduction 8: a malformed line used to cost its length squared in the pruner
    (120 KB: a minute), so every request behind it waited; a MiB is now read, refused by
    the SDK's parser (no id can be read from it, so no answer), and the next request is
    answered."""
    call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":'
    mib = 1 << 20
    wire = Wire(workspace)
    try:
        wire.handshake()
        for id_, hostile in (
            (3, call + "[" * 150 + '"' + '\\"' * (mib // 2)),  # a string left open, quotes escaped
            (4, call + '[{"a":' * (mib // 6)),  # deeply nested, never closed
            (5, call + "[" * (mib // 2) + "]" * (mib // 2) + "}}}"),  # deeply nested, well formed
        ):
            wire.send(hostile)
            wire.send(f'{{"jsonrpc":"2.0","id":{id_},"method":"ping"}}')
            answer = wire.answer()
            if answer["id"] == 2:  # refused: one error answer, then the ping's
                assert answer["result"]["isError"] is True, answer
                answer = wire.answer()
            assert answer == {"jsonrpc": "2.0", "id": id_, "result": {}}
    finally:
        err = wire.close()
    assert "Traceback" not in err, err
