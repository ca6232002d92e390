"""A detached runner starts in the work tree, and the work tree is what a checked-out
branch (or an MCP client that writes files) chose: Python modules planted there must
never be imported by our own background processes (docs/security.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strato.agents.interpreter import own_python
from tests.support import console
from tests.support.repos import commit_all, git, write_files

BIN = Path(sys.executable).parent
PLANTED = ("subprocess.py", "runpy.py", "strato/__init__.py", "strato/runs/__init__.py")
SPEC = """version: 1
contracts: {Out: {text: string}}
flows:
  entry: f
  f:
    input: {}
    output: {from: "${s.output}", contract: Out}
    steps:
      - {id: s, do: "say hi", agent: claude, out: Out}
"""


def checked_out_pr(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose checked-out branch plants a module of each name that writes a
    marker when imported; the markers' folder."""
    marks = tmp_path / "marks"
    marks.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    write_files(root, {"README.md": "hi\n"})
    commit_all(root, "init")
    git(root, "checkout", "-q", "-b", "pr")
    write_files(root, {
        name: f"open({str(marks / name.replace('/', '_'))!r}, 'a').write('imported')\n" for name in PLANTED
    })
    commit_all(root, "a helper")
    return root, marks


def cli(root: Path, *args: str) -> dict[str, object]:
    proc = subprocess.run([str(BIN / "strato"), *args, "--json"], cwd=root, capture_output=True,
                          text=True, check=False)
    doc = json.loads(proc.stdout)
    assert isinstance(doc, dict), proc
    return doc


def settled(poll: list[str], root: Path, running: set[str]) -> dict[str, object]:
    """Poll until the run leaves ``running`` (bounded by count, not by a time limit). The
    polls read state, in process; the start and the runner it detaches are real processes."""
    for _ in range(150):
        proc = console.run("strato", *poll, "--json", cwd=root)
        doc = json.loads(proc.stdout)
        assert isinstance(doc, dict), proc
        if doc.get("status") not in running:
            return doc
        time.sleep(0.1)
    raise AssertionError(f"{poll} still running: {doc}")


def test_own_python_is_this_interpreter_isolated() -> None:
    assert own_python("-m", "x") == [sys.executable, "-I", "-m", "x"]


def test_a_background_agent_run_imports_nothing_from_the_work_tree(tmp_path: Path) -> None:
    root, marks = checked_out_pr(tmp_path)
    started = cli(root, "agent", "run", "claude", "--prompt", "hi", "--background")
    done = settled(["agent", "poll", str(started["runId"])], root, {"running"})
    assert done["status"] == "error"  # no `claude` here: the runner itself ran, ours
    assert sorted(p.name for p in marks.iterdir()) == []


@pytest.mark.parametrize("planted", ["subprocess.py", "strato/__init__.py"])
def test_a_background_flow_run_imports_nothing_from_the_work_tree(tmp_path: Path, planted: str) -> None:
    root, marks = checked_out_pr(tmp_path)
    spec = tmp_path / "mine.yaml"  # the person's own spec, outside the repository
    spec.write_text(SPEC)
    started = cli(root, "run", str(spec), "--background", "--id", "bg-1")
    assert started.get("runId", started.get("run_id")) == "bg-1" or started.get("ok") is not False, started
    settled(["flow", "show", "bg-1"], root, {"running", "planned", "pending"})
    assert sorted(p.name for p in marks.iterdir()) == []
