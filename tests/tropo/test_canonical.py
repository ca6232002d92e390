"""Canonical JSON against known JavaScript outputs and against vivary_core's
canonicalizer on generated values."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.oracle import run_upstream
from tropo.canonical import canonicalize, deterministic_id, fingerprint, is_lossless


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (0.1 + 0.2, "0.30000000000000004"),
        (-0.0, "0"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),
        (10**400, "null"),
        (float("nan"), "null"),
        (100.0, "100"),
        (True, "true"),
        ('\u2028é\x1f\ud800"\\\n', '"\u2028é\\u001f\\ud800\\"\\\\\\n"'),
        ({"\uffff": 1, "\U0001f600": 2, "b": 3, "B": 4}, '{"B":4,"b":3,"\U0001f600":2,"\uffff":1}'),
    ],
)
def test_javascript_semantics(value: Any, text: str) -> None:
    assert canonicalize(value) == text


def test_non_string_keys_and_foreign_types_raise() -> None:
    with pytest.raises(TypeError):
        canonicalize({1: "x"})
    with pytest.raises(TypeError):
        canonicalize({"x": {1, 2}})


def test_lossless_bounds() -> None:
    assert is_lossless({"a": [2**53 - 1, -(2**53 - 1), 1.5, None, "x", True]})
    for bad in (2**53, float("inf"), float("nan"), {1: "x"}, (1,)):
        assert not is_lossless({"a": [bad]})
    shared: list[Any] = []
    assert is_lossless([shared, shared]), "a shared value is not a cycle"
    cycle: list[Any] = []
    cycle.append(cycle)
    assert not is_lossless(cycle)


def test_identities() -> None:
    assert fingerprint({}) == ("sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a")
    assert deterministic_id("capsule", None) == "capsule_74234e98afe7498f"


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(9 if depth < 4 else 6)
    if choice == 0:
        return rng.choice([None, True, False])
    if choice == 1:
        return rng.randint(-(2**60), 2**60)
    if choice == 2:
        return rng.choice([rng.uniform(-1e25, 1e25), rng.uniform(-1e-8, 1e-8), rng.random()])
    if choice in (3, 4, 5):
        alphabet = 'aZ09 "\\\n\t\x00\x1f\x7fé\u2028\ud83d\ude00\uffff\ud800'
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if choice in (6, 7):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["".join(rng.choice("bB\U0001f600\uffff_1") for _ in range(3)) for _ in range(3)]
    return {key: _random_value(rng, depth + 1) for key in keys[: rng.randrange(4)]}


def test_matches_vivary_core_on_generated_values(upstream: Callable[[str], Path]) -> None:
    rng = random.Random(2026)
    values = [_random_value(rng) for _ in range(400)]
    script = (
        "import json, sys\n"
        "from vivary_core.canonical import canonicalize, fingerprint\n"
        "values = json.loads(sys.stdin.read())\n"
        "print(json.dumps([[canonicalize(v), fingerprint(v)] for v in values]))\n"
    )
    upstream_result = run_upstream(upstream("python"), script, values)
    # Both sides read the same JSON text, so they canonicalize the same values.
    ours = [[canonicalize(v), fingerprint(v)] for v in json.loads(json.dumps(values))]
    assert upstream_result == ours
