"""The spec-kit task compiler: a directory of `tasks/*.md` files becomes a v1 spec.

Each file is one `do` step; `[P]` in the title marks it parallel; acceptance criteria
become ensures where a deterministic check exists and "Also verify" text otherwise. The
emitted YAML is validated again before it is returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from strato.flow.validate import load_spec
from strato.flow.yamlload import SpecReadError, read_spec_file

CONTRACT = "TaskResult"
_PARALLEL = re.compile(r"\[p\]", re.IGNORECASE)
_CRITERION = re.compile(r"^\s*[-*]\s+\[[ xX]\]\s+(.*\S)\s*$")
_CRITERIA_HEADING = re.compile(r"^##\s+acceptance criteria\s*$", re.IGNORECASE)
_FILE_EXISTS = re.compile(r"^file\s+(\S+)\s+exists?$", re.IGNORECASE)
_FILE_CONTAINS = re.compile(
    r"""^file\s+(\S+)\s+contains?\s+(?:"(.*)"|'(.*)'|(.+))$""", re.IGNORECASE
)
_TESTS_PASS = re.compile(r"\btests?\b.*\bpass", re.IGNORECASE)
_LINT_CLEAN = re.compile(r"no lint errors?|lint (passes?|clean)", re.IGNORECASE)


class _Dumper(yaml.SafeDumper):
    """Multi-line task text as readable `|` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


class SpeckitError(Exception):
    """`error_type` is one of directory_not_found, no_tasks, step_id_collision,
    compile_error."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


@dataclass
class Task:
    id: str
    title: str
    parallel: bool
    description: str
    ensures: list[dict[str, Any]] = field(default_factory=list)
    judgment: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "parallel": self.parallel,
            "ensures": self.ensures,
            "judgment": self.judgment,
        }


@dataclass
class Compiled:
    yaml: str
    flow_name: str
    tasks: list[Task]

    def to_json(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "yaml": self.yaml,
            "flow_name": self.flow_name,
            "steps": [t.summary() for t in self.tasks],
        }


def step_id(stem: str) -> str:
    """File stem -> step id: lowercase, other characters to `_`, starts with a letter."""
    sid = re.sub(r"[^a-z0-9]", "_", stem.lower()).strip("_")
    if sid and not sid[0].isalpha():
        sid = "t" + sid
    return sid or "task"


def criterion(text: str) -> dict[str, Any] | None:
    """The ensure a criterion compiles to, or None when it needs judgment."""
    if m := _FILE_EXISTS.match(text):
        return {"file_exists": m.group(1)}
    if m := _FILE_CONTAINS.match(text):
        found = next(g for g in m.groups()[1:] if g is not None)
        return {"file_contains": {"path": m.group(1), "text": found}}
    if _TESTS_PASS.search(text):
        return {"expr": "result.tests_pass == true"}
    if _LINT_CLEAN.search(text):
        return {"expr": "result.lint_clean == true"}
    return None


def parse_task(path: Path) -> Task:
    lines = read_spec_file(path).splitlines()
    title_at = next((i for i, ln in enumerate(lines) if ln.startswith("#")), None)
    title = lines[title_at].lstrip("#").strip() if title_at is not None else path.stem
    title = re.sub(r"^task:\s*", "", title, flags=re.IGNORECASE)
    parallel = bool(_PARALLEL.search(title))
    title = re.sub(r"\s+", " ", _PARALLEL.sub("", title)).strip()
    body = lines[(title_at + 1) if title_at is not None else 0 :]
    heading = next((i for i, ln in enumerate(body) if _CRITERIA_HEADING.match(ln)), len(body))
    task = Task(step_id(path.stem), title, parallel, "\n".join(body[:heading]).strip())
    for line in body[heading + 1 :]:
        if m := _CRITERION.match(line):
            ensure = criterion(m.group(1))
            if ensure is None:
                task.judgment.append(m.group(1))
            else:
                task.ensures.append(ensure)
    return task


def link(tasks: list[Task]) -> None:
    """A sequential task waits for the previous sequential task, or for the whole
    parallel group before it; parallel tasks wait for the last sequential task."""
    last_seq: str | None = None
    group: list[str] = []
    for task in tasks:
        if task.parallel:
            task.after = [last_seq] if last_seq else []
            group.append(task.id)
        else:
            task.after = group or ([last_seq] if last_seq else [])
            last_seq, group = task.id, []


def _step(task: Task) -> dict[str, Any]:
    text = "\n".join(
        part
        for part in (
            task.title,
            task.description,
            "Also verify: " + "; ".join(task.judgment) if task.judgment else "",
        )
        if part
    )
    step: dict[str, Any] = {
        "id": task.id,
        "do": text,
        "out": CONTRACT,
        "ensure": [*task.ensures, {"expr": "result.done == true"}],
        "attempts": 3,
    }
    if task.after:
        step["after"] = task.after
    return step


def compile_tasks(tasks_dir: Path, flow_name: str = "tasks") -> Compiled:
    if flow_name == "entry":
        raise SpeckitError("compile_error", "flow name 'entry' is reserved")
    if not tasks_dir.is_dir():
        raise SpeckitError("directory_not_found", f"{tasks_dir}: not a directory")
    try:
        tasks = [parse_task(p) for p in sorted(tasks_dir.glob("*.md"), key=lambda p: p.name)]
    except SpecReadError as exc:
        raise SpeckitError("compile_error", f"cannot read a task file: {exc}") from None
    if not tasks:
        raise SpeckitError("no_tasks", f"{tasks_dir}: no *.md task files")
    seen: dict[str, str] = {}
    for task in tasks:
        if task.id in seen:
            raise SpeckitError(
                "step_id_collision",
                f"{task.title!r} and {seen[task.id]!r} both become step {task.id!r}",
            )
        seen[task.id] = task.title
        if "${" in task.title + task.description + "".join(task.judgment) + str(task.ensures):
            raise SpeckitError("compile_error", f"task {task.id!r} contains '${{'")
    link(tasks)
    spec = {
        "version": 1,
        "contracts": {
            CONTRACT: {"done": "boolean", "tests_pass": "boolean?", "lint_clean": "boolean?"}
        },
        "flows": {
            "entry": flow_name,
            flow_name: {
                "input": {"project_context": "string"},
                "output": {"from": f"${{{tasks[-1].id}.output}}", "contract": CONTRACT},
                "steps": [_step(t) for t in tasks],
            },
        },
    }
    text = yaml.dump(spec, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    _, errors = load_spec(text)
    if errors:
        raise SpeckitError("compile_error", f"compiled spec is invalid: {errors[0]}")
    return Compiled(text, flow_name, tasks)
