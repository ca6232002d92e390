"""Every command that takes a revision (``--base``, ``--head``, ``--rev``, ``--since``,
``--new-since``, ``tropo diff A..B``) refuses a short name that a tag shares with a
branch: exit 2, one line naming both refs, the command's JSON error under ``--json``,
nothing written. The full ref passes the same command (issue 25, one revision resolver)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repos import git

BIN = Path(sys.executable).parent
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


def _argv(command: list[str], name: str) -> list[str]:
    return [str(BIN / command[0]), *(word.replace(NAME, name) for word in command[1:]), "--json"]


def _state(ws: Path) -> tuple[str, list[str]]:
    """Every ref, and every file under .git (caches and sidecars included) with its size."""
    refs = git(ws, "for-each-ref", "--format=%(refname) %(objectname)")
    files = sorted(f"{p.relative_to(ws)} {p.stat().st_size}" for p in (ws / ".git").rglob("*") if p.is_file())
    return refs, files


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace whose ``main`` is also a tag, on the commit before the branch's tip."""
    subprocess.run([BIN / "create-vivary", "init", "ws"], cwd=tmp_path, check=True, capture_output=True)
    root = tmp_path / "ws"
    quiet = ("-c", "core.hooksPath=/dev/null")  # no background heartbeat writing beside the test
    git(root, "add", "-A")
    git(root, *quiet, "commit", "-q", "-m", "first")
    git(root, *quiet, "commit", "-q", "--allow-empty", "-m", "second")
    git(root, "tag", "main", "HEAD~1")
    (tmp_path / "spec.toml").write_text("")
    return root


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c).replace(NAME, "REV"))
def test_an_ambiguous_short_name_is_refused_and_the_full_ref_is_not(ws: Path, command: list[str]) -> None:
    before = _state(ws)
    proc = subprocess.run(_argv(command, "main"), cwd=ws, capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "'main' is ambiguous" in lines[0], proc.stderr
    assert "refs/tags/main" in lines[0] and "refs/heads/main" in lines[0]
    doc = json.loads(proc.stdout)  # exactly one JSON document: the command's error
    assert doc.get("ok") is False or doc.get("status") == "error", doc
    assert "refs/tags/main" in json.dumps(doc)
    assert _state(ws) == before  # nothing written, no ref moved

    full = subprocess.run(_argv(command, "refs/heads/main"), cwd=ws, capture_output=True, text=True,
                          check=False)
    assert full.returncode in (0, 1), full.stdout + full.stderr
    assert "ambiguous" not in full.stderr and "Traceback" not in full.stderr
