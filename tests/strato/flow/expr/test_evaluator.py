"""The evaluator's builtins and predicates at the edges the flow suite reaches only
through whole runs: min/max, file predicates inside a workspace, typed errors with the
messages a spec author reads (written against mutation survivors, docs/testing.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strato.flow.expr import ExprError, evaluate
from strato.flow.expr.evaluator import evaluate_predicate


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
