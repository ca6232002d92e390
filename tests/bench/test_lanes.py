"""The lanes benchmark counts what it claims: on a small run, always-verify asks the
judge once per output and catches every bad one, and the adaptive run never lets a bad
output through while its lane had not earned trust."""

from __future__ import annotations

from bench import lanes
from strato.flow.validate import load_spec


def test_the_benchmark_spec_is_a_valid_flow_of_four_steps_per_call() -> None:
    spec, errors = load_spec(lanes.spec(3, "cheap"))
    assert spec is not None and not errors
    unit = spec.flow("unit")
    main = spec.flow("main")
    assert unit is not None and main is not None
    assert [s.id for s in unit.typed_steps] == list(lanes.STEPS) and len(main.typed_steps) == 3


def test_a_small_run_tallies_calls_and_catches() -> None:
    always = lanes.measure("paranoid", 3, 0.2)
    assert always["status"] == "completed"
    assert always["judgeCalls"] == always["outputs"] >= 12
    assert always["missed"] == 0 and always["caught"] == always["injected"]
    adaptive = lanes.measure("cheap", 3, 0.2)
    assert adaptive["missedUntrusted"] == 0
    assert adaptive["judgeCalls"] <= adaptive["outputs"]
