"""A task set is a folder of task nodes (`type: task` Markdown files, the `evals` pack of
the workspace schema) each naming its input, its fixture and its scorer. A task that
cannot be read is kept with its reason, so a run reports it and runs the rest.

The author of a task set chooses every byte here: a task's scorer names a command by
name only, and the argv behind the name comes from the user's own config
(:mod:`strato.evals.scorers`); a fixture is copied, never run."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tropo.check.frontmatter import parse
from tropo.git import gitcli
from tropo.git.objects import tree_files
from tropo.git.repo import discover, workdir
from tropo.git.revspec import resolve_commit

SCORERS = ("ensures", "judge")  # and `command:NAME`
_COMMAND = re.compile(r"command:[A-Za-z0-9_-]+")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
MAX_TASK_BYTES = 256 * 1024


class TaskSetError(Exception):
    """The folder is not a task set at all (a usage error: exit 2)."""


@dataclass(frozen=True)
class GitTree:
    """A fixture layer that is a folder of a commit (`git:REV:PATH`) of the repository
    holding the task set, pinned to the commit REV named when the set was read."""

    root: Path
    commit: str
    prefix: str  # "" for the whole tree, else "PATH/"

    def files(self) -> dict[str, bytes]:
        """The layer's files by their path below the prefix (one `cat-file --batch`)."""
        listed = {p[len(self.prefix):]: oid for p, oid in tree_files(self.root, self.commit).items()
                  if p.startswith(self.prefix)}
        data = gitcli.blobs(self.root, listed.values())
        return {rel: data[oid] for rel, oid in listed.items() if oid in data}


Layer = Path | GitTree


@dataclass(frozen=True)
class Task:
    """One task: what the flow gets (`input`), the folder copied for it (`fixture`), how
    it is scored, and its digest (the task file and every fixture file), or why it is
    broken (`problem`)."""

    id: str
    digest: str
    input: dict[str, Any] = field(default_factory=dict)
    fixture: tuple[Layer, ...] = ()  # copied in order, a later file over an earlier
    scorer: str = "ensures"
    statement: str = ""
    problem: str | None = None

    @property
    def command(self) -> str | None:
        """The scorer command's name (`command:NAME`), None for the other scorers."""
        return self.scorer.partition(":")[2] if self.scorer.startswith("command:") else None


def load_set(folder: Path) -> list[Task]:
    """Every task under `folder/tasks/` (or `folder` itself), by id; broken ones with
    their reason."""
    if not folder.is_dir():
        raise TaskSetError(f"{folder}: no such task set folder")
    where = folder / "tasks" if (folder / "tasks").is_dir() else folder
    tasks: dict[str, Task] = {}
    for path in sorted(where.glob("*.md")):
        task = _task(folder, path)
        if task.id in tasks:  # kept under its file's name, which no task id can be
            task = Task(path.name, task.digest, problem=f"{path.name}: a second task with id {task.id!r}")
        tasks[task.id] = task
    if not tasks:
        raise TaskSetError(f"{folder}: no task files (tasks/*.md with `type: task`)")
    return [tasks[k] for k in sorted(tasks)]


def _task(root: Path, path: Path) -> Task:
    data = path.read_bytes()[: MAX_TASK_BYTES + 1]
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_TASK_BYTES:
        return Task(path.stem, digest, problem=f"{path.name}: larger than {MAX_TASK_BYTES} bytes")
    try:
        parsed = parse(data.decode("utf-8"))
    except UnicodeDecodeError:
        return Task(path.stem, digest, problem=f"{path.name}: not UTF-8")
    fields = parsed.fields
    task_id = fields.get("id", path.stem)
    if not isinstance(task_id, str) or not _ID.match(task_id):
        return Task(path.stem, digest, problem=f"{path.name}: id must be letters, digits, '-', '_'")
    if (why := _problem(parsed.error, fields)) is not None:
        return Task(task_id, digest, problem=f"{path.name}: {why}")
    named = fields["fixture"] if isinstance(fields["fixture"], list) else [fields["fixture"]]
    layers = [_layer(root, str(rel)) for rel in named]
    if not named or None in layers:
        why = (f"fixture {fields['fixture']!r} is not a folder of the set or a git:REV:PATH "
               "of its repository (or a list of them)")
        return Task(task_id, digest, problem=f"{path.name}: {why}")
    fixture = tuple(f for f in layers if f is not None)
    digest = hashlib.sha256(data + "".join(map(fixture_digest, fixture)).encode()).hexdigest()
    return Task(task_id, digest, dict(fields["input"]), fixture, str(fields["scorer"]),
                str(fields.get("statement", "")))


def _problem(error: tuple[str, int] | None, fields: dict[str, Any]) -> str | None:
    """Why these frontmatter fields are not a task (None: they are)."""
    if error is not None:
        return f"line {error[1]}: {error[0]}"
    if fields.get("type") != "task":
        return "not a task (`type: task`)"
    missing = [k for k in ("input", "fixture", "scorer") if k not in fields]
    if missing:
        return f"missing {', '.join(missing)}"
    if not isinstance(fields["input"], dict):
        return "input must be a mapping (the flow's input)"
    scorer = fields["scorer"]
    if not isinstance(scorer, str) or not (scorer in SCORERS or _COMMAND.fullmatch(scorer)):
        return "scorer must be ensures, judge or command:NAME"
    if scorer == "judge" and not isinstance(fields.get("statement"), str):
        return "a judge scorer needs a statement"
    return None


def _layer(root: Path, rel: str) -> Layer | None:
    """A fixture layer: `git:REV:PATH` in the set's repository, else a folder of the set."""
    if not rel.startswith("git:"):
        return _inside(root, rel)
    rev, _, sub = rel[4:].partition(":")
    repo = discover(root)
    if repo is None or not rev:
        return None
    try:
        commit = str(resolve_commit(repo, rev).id)
    except gitcli.RevisionError:
        return None
    prefix = sub.strip("/") + "/" if sub.strip("/") else ""
    layer = GitTree(workdir(repo), commit, prefix)
    return layer if layer.files() else None


def _inside(root: Path, rel: str) -> Path | None:
    """`rel` under the set's own folder, as a real folder inside it (no `..` out, no
    symlink out), else None."""
    base = root.resolve()
    target = (base / rel).resolve()
    return target if target.is_dir() and target.is_relative_to(base) else None


def fixture_files(fixture: Path) -> list[Path]:
    """The fixture's regular files, sorted (links and special files are not copied)."""
    return sorted(p for p in fixture.rglob("*") if p.is_file() and not p.is_symlink()
                  and "__pycache__" not in p.parts)


def layer_files(layer: Layer) -> dict[str, bytes]:
    """A fixture layer's files by relative path (a folder's regular files, or a tree's)."""
    if isinstance(layer, GitTree):
        return layer.files()
    return {p.relative_to(layer).as_posix(): p.read_bytes() for p in fixture_files(layer)}


def fixture_digest(layer: Layer) -> str:
    """One digest of a fixture layer's file names and contents."""
    h = hashlib.sha256()
    for rel, data in sorted(layer_files(layer).items()):
        h.update(rel.encode() + b"\0" + data + b"\0")
    return h.hexdigest()
