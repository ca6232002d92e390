"""Applying a heartbeat memory line writes the private, git-ignored MEMORY.md (created if
absent) under its `## Lessons`, commits nothing and records the decision (on 7f21ccb it
was refused: "changes no file: act on it by hand"). The file is refused when git would
share it (tracked, or not ignored) or when it is a link, with nothing written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from strato.heartbeat import engine
from strato.proposals import store
from strato.proposals.settings import Settings
from tests.support import console
from tests.support.heartbeat import T0, commit_at
from tests.support.repos import git

IGNORED = {".gitignore": "heartbeat-reports/\nMEMORY.md\n"}


def memory_line(ws: Path) -> str:
    """A revert, so the heartbeat proposes one memory line; its id."""
    commit_at(ws, T0, "cache the index", {"cache.py": "x"})
    git(ws, "revert", "--no-edit", "HEAD")
    engine.run(ws, Settings(), now=T0)
    [pid] = [r["id"] for r in store.all_records(store.sidecar(ws)) if r["kind"] == "memory"]
    return str(pid)


def apply(ws: Path, pid: str) -> tuple[int, Any, str]:
    proc = console.run("strato", "heartbeat", "apply", pid, "--root", ws, "--json")
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def state(ws: Path) -> tuple[str, str, str]:
    return (git(ws, "rev-parse", "HEAD"), git(ws, "status", "--porcelain", "--ignored"),
            git(ws, "for-each-ref"))


def test_a_memory_line_is_applied_to_the_private_memory_file(ws: Path) -> None:
    commit_at(ws, T0, "ignore private memory", IGNORED)
    pid = memory_line(ws)
    before = state(ws)
    code, doc, _ = apply(ws, pid)
    assert code == 0 and doc["status"] == "applied" and doc["file"] == "MEMORY.md"
    text = (ws / "MEMORY.md").read_text()
    assert "cache the index" in text and text.startswith("# MEMORY") and "## Lessons\n\n- Reverted: " in text
    assert f"({pid})" in text and (ws / "MEMORY.md").stat().st_mode & 0o777 == 0o600
    after = state(ws)
    assert after[0] == before[0] and after[2] == before[2]  # nothing committed, no branch
    assert "!! MEMORY.md" in after[1]  # git ignores it
    assert store.get(store.sidecar(ws), pid)["status"] == "applied"
    code, again, _ = apply(ws, pid)
    assert code == 1 and "already" in again["error"]["message"] and (ws / "MEMORY.md").read_text() == text


def test_an_existing_memory_file_gains_only_the_line(ws: Path) -> None:
    commit_at(ws, T0, "ignore private memory", IGNORED)
    mine = "# MEMORY (private: ignored by git)\n\n## Focus\nship it\n\n## Lessons\n- old one\n\n## Open loops\n- x\n"
    (ws / "MEMORY.md").write_text(mine)
    pid = memory_line(ws)
    assert apply(ws, pid)[0] == 0
    text = (ws / "MEMORY.md").read_text()
    added = [line for line in text.splitlines() if line not in mine.splitlines()]
    assert len(added) == 1 and added[0].startswith("- Reverted: ")
    assert text.replace(added[0] + "\n", "") == mine
    assert text.index(added[0]) < text.index("## Open loops")


def test_a_memory_file_git_would_share_or_a_link_is_refused(ws: Path, tmp_path: Path) -> None:
    pid = memory_line(ws)
    code, doc, _ = apply(ws, pid)  # not ignored: it could be committed by accident
    assert code == 1 and "not git-ignored" in doc["error"]["message"] and not (ws / "MEMORY.md").exists()
    commit_at(ws, T0, "a tracked memory", {"MEMORY.md": "# shared\n"})
    commit_at(ws, T0, "ignore it too", IGNORED)
    code, doc, _ = apply(ws, pid)
    assert code == 1 and "tracked" in doc["error"]["message"]
    assert (ws / "MEMORY.md").read_text() == "# shared\n"
    git(ws, "rm", "-q", "--cached", "MEMORY.md")
    git(ws, "commit", "-q", "-m", "untrack memory")
    (ws / "MEMORY.md").unlink()
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("not yours\n")
    (ws / "MEMORY.md").symlink_to(elsewhere)
    code, doc, _ = apply(ws, pid)
    assert code == 1 and "not a plain file" in doc["error"]["message"]
    assert elsewhere.read_text() == "not yours\n"
    assert store.get(store.sidecar(ws), pid)["status"] == "open"
    assert subprocess.run(["git", "branch", "--list", "heartbeat/*"], cwd=ws, capture_output=True,
                          text=True, check=True).stdout == ""
