"""A task set's author controls every byte of it: whatever its task files say, loading
never fails as a whole (a bad task is broken, with its reason), a fixture is a folder
inside the set, and a scorer names a command only by name (its argv is the user's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.evals.tasks import load_set

VALUES = st.one_of(st.text(max_size=30), st.integers(), st.none(), st.booleans(),
                   st.sampled_from(["fixture", "..", "../..", "/etc", "ensures", "judge", "command:x",
                                    "command:a b", "command:../../bin/sh", ["fixture", ".."], {"a": 1}]))
FIELDS = st.dictionaries(st.sampled_from(["type", "id", "fixture", "scorer", "input", "statement"]),
                         VALUES, max_size=6)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(FIELDS.map(lambda f: "---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in f.items())
                                     + "---\n"), st.text(max_size=200)), min_size=1, max_size=4))
def test_any_task_files_load_as_tasks_or_broken_tasks(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str]
) -> None:
    root: Path = tmp_path_factory.mktemp("set")
    (root / "fixture").mkdir()
    (root / "tasks").mkdir()
    for i, text in enumerate(texts):
        (root / "tasks" / f"t{i}.md").write_text(text)
    tasks = load_set(root)
    assert len(tasks) == len(texts)  # every file is a task or a broken one
    for task in tasks:
        if task.problem is None:
            assert task.fixture and all(f.resolve().is_relative_to(root.resolve()) for f in task.fixture)
            assert task.scorer in ("ensures", "judge") or (task.command or "").replace("-", "").replace("_", "").isalnum()
            assert isinstance(task.input, dict)


def test_a_second_task_with_an_id_is_broken_not_lost(tmp_path: Path) -> None:
    (tmp_path / "fixture").mkdir()
    (tmp_path / "tasks").mkdir()
    for name in ("a", "b"):
        (tmp_path / "tasks" / f"{name}.md").write_text(
            "---\ntype: task\nid: same\nfixture: fixture\nscorer: ensures\ninput: {}\n---\n")
    tasks = {t.id: t for t in load_set(tmp_path)}
    assert tasks["same"].problem is None and "a second task with id 'same'" in str(tasks["b.md"].problem)
