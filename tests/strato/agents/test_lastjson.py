"""The last JSON object in agent output: the same answer as the greedy definition
(decode at every `{`, continue after what parsed), on hostile output too."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.lastjson import greedy  # the old definition: the benchmark's baseline is the test's oracle
from strato.agents.calls import call
from strato.agents.config import AgentSpec
from strato.agents.lastjson import last_json_object

JSONISH = st.lists(
    st.sampled_from(['{', '}', '[', ']', '"', ':', ',', ' ', '\n', '\\', 'a', '1', '-', '.', 'e',
                     'true', 'null', 'NaN', '-Infinity', '\\u00e9', '\\x', '\t', '\x01', '0', '{}', '"k"']),
    max_size=40,
).map("".join)


def embedded_documents() -> st.SearchStrategy[str]:
    values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=8,
    )
    piece = st.one_of(values.map(json.dumps), JSONISH, st.text(max_size=5))
    return st.lists(piece, max_size=6).map("".join)


@settings(max_examples=1500)
@given(JSONISH)
def test_agrees_with_the_definition_on_json_like_noise(text: str) -> None:
    assert last_json_object(text) == greedy(text)


@settings(max_examples=800)
@given(embedded_documents())
def test_agrees_with_the_definition_on_documents_among_noise(text: str) -> None:
    assert last_json_object(text) == greedy(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": {"b": 1}',  # a broken outer object: the nested one parses
        '{"x": "{\\"y\\": 2}", "z": {"w": 3}',  # a `{` read inside a string, then a nested one
        '{"s": "{}"',  # the `{}` inside an unterminated object's string is an object
        '{"a": 1} {"b": [1, {"c": 2}]} tail {',
        '{"n": 01}',
        '{"n": NaN, "i": -Infinity}',
        '{"a": 1,}{"ok": true}',
        '{{{ \t{x {\r\n}{ "a" :{{}}} {',  # `{`s no object starts at, among ones that do
        '{"s": "{{{ {\\"}"}{ \n',  # ... inside a string, and one at the end
        '{"k" x {"k"{"a" : 1} {"b"\n:{"c":"{\\"d\\": 2}"}} {"e" ',  # a key with no colon
    ],
)
def test_agrees_on_known_traps(text: str) -> None:
    assert last_json_object(text) == greedy(text)


HOSTILE = {
    "braces": "{",
    "keys": '{"a":',
    "open strings": '{"',
    "nested unclosed": '{"a":[{"b":',
    "strings holding braces": '{"a":"{",',
}


@pytest.mark.parametrize("unit", list(HOSTILE.values()), ids=list(HOSTILE))
def test_mebibytes_of_hostile_output_still_give_the_answer(unit: str) -> None:
    """Each attempt is bounded: this took minutes with the greedy decoder."""
    answer = {"label": "ok", "n": [1, 2]}
    text = unit * (2 * 1024 * 1024 // len(unit)) + "\n" + json.dumps(answer)
    assert last_json_object(text) == answer
    assert last_json_object(text[: -len(json.dumps(answer))]) is None


def test_an_agent_printing_forty_mebibytes_of_braces_gets_its_answer(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        chunk = "{" * (1 << 20)
        for _ in range(40):
            sys.stdout.write(chunk)
        print(json.dumps({"verdict": "done"}))
    """))
    agent = AgentSpec("hostile", (sys.executable, str(script), "{prompt}"), 600)
    assert call(agent, "x", tmp_path).output == {"verdict": "done"}


def test_nested_objects_are_never_mistaken_for_the_last_one() -> None:
    text = 'thinking {"a": 1}\nmore text { broken\n{"b": {"c": 2}, "d": [ {"e": 3} ]} trailing'
    assert last_json_object(text) == {"b": {"c": 2}, "d": [{"e": 3}]}
    assert last_json_object("no json here [1, 2]") is None


def test_an_integer_past_pythons_digit_limit_is_no_object_not_a_crash() -> None:
    """A model may answer `{"n": 1111...}` with more digits than `int()` takes."""
    assert last_json_object('{"n": 1} then {"n": ' + "1" * 5000 + "}") == {"n": 1}


@pytest.mark.parametrize("end", ["\x01", "", "\\x", "\\u12"])
def test_a_string_that_never_closes_costs_its_length_not_two_to_its_length(end: str) -> None:
    """The string pattern once let a plain run and an escape share one star: 60 characters
    then a control character backtracked 2**60 ways (an agent's output could hang it)."""
    for unit in ('{"', '{"k": "', '{"k": ["'):
        assert last_json_object(unit + "a" * 60 + end + '\n{"ok": 1}') == {"ok": 1}
        assert last_json_object(unit + "a" * 60 + end) is None
