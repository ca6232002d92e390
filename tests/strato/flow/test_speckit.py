"""The spec-kit compiler: output validates, has the documented dependency edges and
the documented criterion mapping; bad task directories fail with typed errors."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from strato.flow.spec import DoStep
from strato.flow.speckit import SpeckitError, compile_tasks, criterion, step_id
from strato.flow.validate import load_spec

TASKS = Path(__file__).parent / "fixtures" / "speckit_tasks"


def test_compiled_spec_validates_with_the_documented_edges() -> None:
    compiled = compile_tasks(TASKS, "build")
    spec, errors = load_spec(compiled.yaml)
    assert errors == [] and spec is not None
    steps = spec.flow_map["build"].typed_steps
    assert {s.id: s.after for s in steps} == {
        "t01_setup": None,  # first sequential task
        "t02_auth": ["t01_setup"],  # parallel: after the last sequential task
        "t03_api": ["t01_setup"],  # parallel, no edge to its sibling
        "t04_docs": ["t02_auth", "t03_api"],  # sequential: after the whole group
        "t05_release": ["t04_docs"],  # sequential: after the previous sequential
    }
    assert spec.flow_map["build"].output.from_ == "${t05_release.output}"
    assert spec.contracts["TaskResult"] == {
        "done": "boolean",
        "tests_pass": "boolean?",
        "lint_clean": "boolean?",
    }
    assert [t.parallel for t in compiled.tasks] == [False, True, True, False, False]


def test_criteria_become_ensures_and_judgment() -> None:
    compiled = compile_tasks(TASKS)
    spec, _ = load_spec(compiled.yaml)
    assert spec is not None
    auth = spec.flow_map["tasks"].typed_steps[1]
    assert isinstance(auth, DoStep)
    assert [e.model_dump(by_alias=True) for e in auth.ensure or []] == [
        {"file_exists": "src/auth/middleware.ts"},
        {"file_contains": {"path": "src/auth/middleware.ts", "text": "verifyToken"}},
        {"expr": "result.tests_pass == true"},
        {"expr": "result.lint_clean == true"},
        {"expr": "result.done == true"},
    ]
    assert auth.do == (
        "Implement authentication\nAdd JWT-based authentication to the API.\n"
        "Also verify: Error messages are user-friendly"
    )
    assert auth.attempts == 3 and auth.out == "TaskResult"
    summary = compiled.to_json()["steps"][1]
    assert summary["title"] == "Implement authentication" and summary["parallel"] is True


@pytest.mark.parametrize(
    ("text", "ensure"),
    [
        ("file build/out.txt exists", {"file_exists": "build/out.txt"}),
        ("File a.txt exist", {"file_exists": "a.txt"}),
        ("file a.txt contains 'x y'", {"file_contains": {"path": "a.txt", "text": "x y"}}),
        (
            "file a.txt contain plain words",
            {"file_contains": {"path": "a.txt", "text": "plain words"}},
        ),
        ("All unit tests pass", {"expr": "result.tests_pass == true"}),
        ("the test suite passes", {"expr": "result.tests_pass == true"}),
        ("tests are green", None),
        ("Lint clean", {"expr": "result.lint_clean == true"}),
        ("Docs are clear", None),
    ],
)
def test_criterion_mapping(text: str, ensure: object) -> None:
    assert criterion(text) == ensure


@pytest.mark.parametrize(
    ("stem", "sid"),
    [
        ("01-setup", "t01_setup"),
        ("Auth Flow", "auth_flow"),
        ("__x__", "x"),
        ("---", "task"),
        ("Ünïcode", "n_code"),
    ],
)
def test_step_ids(stem: str, sid: str) -> None:
    assert step_id(stem) == sid


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "tasks"
    shutil.copytree(TASKS, target)
    return target


@pytest.mark.parametrize(
    ("name", "text", "error_type"),
    [
        ("01_setup.md", "# Same id as 01-setup", "step_id_collision"),
        ("06-inject.md", "# Use ${input.project_context}", "compile_error"),
    ],
)
def test_refusals(tmp_path: Path, name: str, text: str, error_type: str) -> None:
    tasks = _copy(tmp_path)
    (tasks / name).write_text(text)
    with pytest.raises(SpeckitError) as info:
        compile_tasks(tasks)
    assert info.value.error_type == error_type


def test_unreadable_task_file_is_a_compile_error(tmp_path: Path) -> None:
    tasks = _copy(tmp_path)
    os.mkfifo(tasks / "07-pipe.md")  # must not block
    (tasks / "08-bin.md").write_bytes(b"# \xff")
    with pytest.raises(SpeckitError) as info:
        compile_tasks(tasks)
    assert info.value.error_type == "compile_error"


def test_directory_errors(tmp_path: Path) -> None:
    with pytest.raises(SpeckitError) as info:
        compile_tasks(tmp_path / "missing")
    assert info.value.error_type == "directory_not_found"
    with pytest.raises(SpeckitError) as info:
        compile_tasks(tmp_path)
    assert info.value.error_type == "no_tasks"
    with pytest.raises(SpeckitError) as info:
        compile_tasks(TASKS, "entry")
    assert info.value.error_type == "compile_error"
