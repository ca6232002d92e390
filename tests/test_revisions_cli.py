"""Every command that takes a revision (``--base``, ``--head``, ``--rev``, ``--since``,
``--new-since``, ``tropo diff A..B``) refuses a short name that a tag shares with a
branch: exit 2, one line naming both refs, the command's JSON error under ``--json``,
nothing written. The full ref passes the same command (issue 25, one revision resolver)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.console import run
from tests.support.repos import git

NODE = "local-ci-baseline"  # the coding preset's starter change
NAME = "@"  # where the ambiguous name goes in each command line

COMMANDS = [
    ["tropo", "check", "--rev", NAME],
    ["tropo", "check", "--new-since", NAME],
    ["tropo", "types", "--rev", NAME],
    ["tropo", "stats", "--rev", NAME],
    ["tropo", "graph", "--rev", NAME],
    ["tropo", "blast", NODE, "--rev", NAME],
    ["tropo", "signal", "--rev", NAME],
    ["tropo", "review", "--rev", NAME],
    ["tropo", "impact", NODE, "--rev", NAME],
    ["tropo", "query", "baseline", "--rev", NAME],
    ["tropo", "find", "baseline", "--rev", NAME],
    ["tropo", "view", "--rev", NAME],
    ["tropo", "plan", "../spec.toml", "--rev", NAME],
    ["tropo", "log", NODE, "--rev", NAME],
    ["tropo", "diff", f"{NAME}..HEAD"],
    ["tropo", "diff", f"HEAD..{NAME}"],
    ["tropo", "diff", NAME],
    ["vivary", "check", "--rev", NAME],
    ["vivary", "hooks", "check", "--base", NAME],
    ["vivary", "hooks", "check", "--base", "HEAD", "--head", NAME],
    ["strato", "guard", "review", "--base", NAME],
    ["strato", "guard", "review", "--base", "HEAD", "--head", NAME],
    ["strato", "guard", "review", "--base", "HEAD", "--base-notes", NAME],
    ["strato", "guard", "review", "--base", "HEAD", "--since", NAME],
    ["strato", "guard", "verify", "--since", NAME],
    ["strato", "heartbeat", "run", "--since", NAME],
]


def _run(command: list[str], name: str, ws: Path) -> subprocess.CompletedProcess[str]:
    """The command line with the revision named `name`, under --json, in process."""
    return run(command[0], *(word.replace(NAME, name) for word in command[1:]), "--json", cwd=ws)


def _state(ws: Path) -> tuple[str, list[str]]:
    """Every ref, and every file under .git (caches and sidecars included) with its size."""
    refs = git(ws, "for-each-ref", "--format=%(refname) %(objectname)")
    files = sorted(f"{p.relative_to(ws)} {p.stat().st_size}" for p in (ws / ".git").rglob("*") if p.is_file())
    return refs, files


_TEMPLATE: list[Path] = []  # made once per process, inside a test's isolated git environment


def _template() -> Path:
    """A workspace whose ``main`` is also a tag, on the commit before the branch's tip:
    made on first use, read-only (each test gets a copy)."""
    if not _TEMPLATE:
        top = Path(tempfile.mkdtemp(prefix="vivary-revisions-"))
        assert run("create-vivary", "init", "ws", cwd=top).returncode == 0
        root = top / "ws"
        quiet = ("-c", "core.hooksPath=/dev/null")  # no background heartbeat writing beside the test
        git(root, "add", "-A")
        git(root, *quiet, "commit", "-q", "-m", "first")
        git(root, *quiet, "commit", "-q", "--allow-empty", "-m", "second")
        git(root, "tag", "main", "HEAD~1")
        _TEMPLATE.append(root)
    return _TEMPLATE[0]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A copy of the template, with the plan's spec beside it."""
    root = shutil.copytree(_template(), tmp_path / "ws", symlinks=True)
    (tmp_path / "spec.toml").write_text("")
    return root


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c).replace(NAME, "REV"))
def test_an_ambiguous_short_name_is_refused_and_the_full_ref_is_not(ws: Path, command: list[str]) -> None:
    before = _state(ws)
    proc = _run(command, "main", ws)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "'main' is ambiguous" in lines[0], proc.stderr
    assert "refs/tags/main" in lines[0] and "refs/heads/main" in lines[0]
    doc = json.loads(proc.stdout)  # exactly one JSON document: the command's error
    assert doc.get("ok") is False or doc.get("status") == "error", doc
    assert "refs/tags/main" in json.dumps(doc)
    assert _state(ws) == before  # nothing written, no ref moved

    full = _run(command, "refs/heads/main", ws)
    assert full.returncode in (0, 1), full.stdout + full.stderr
    assert "ambiguous" not in full.stderr and "Traceback" not in full.stderr
