"""``run --deep`` on a real terminal (a pty): one question per open proposal, nothing
decided without an answer, and refused without a terminal."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from strato.proposals import store
from tests.support.heartbeat import T0, commit_at
from tests.support.repos import git

STRATO = Path(sys.executable).parent / "strato"
QUESTION = re.compile(r"^\[(?P<kind>[a-z]+)\] (?P<id>[a-z-]+-[0-9a-f]{12}): ", re.MULTILINE)


def on_terminal(root: Path, answer: Callable[[str, str], bytes], *args: str) -> tuple[int, str]:
    """Run ``strato heartbeat run --deep`` with a pty as stdin and stdout; ``answer``
    gets (kind, id) of each question and returns the bytes typed (b"\\x04" is Ctrl-D)."""
    master, slave = os.openpty()
    proc = subprocess.Popen([str(STRATO), "heartbeat", "run", "--deep", "--root", str(root), *args],
                            stdin=slave, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    seen, pending = "", ""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096).decode(errors="replace").replace("\r\n", "\n")
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
        pending += chunk
        if pending.endswith("? "):  # a question is complete: answer its last header
            *_, (kind, pid) = QUESTION.findall(pending)
            pending = ""
            os.write(master, answer(kind, pid))
    os.close(master)
    _, err = proc.communicate(timeout=60)
    assert err == b"", err
    return proc.returncode, seen


def two_proposals(ws: Path) -> None:
    """A playbook row (it writes a file) and a memory line (it does not)."""
    for n in (1, 2):
        commit_at(ws, T0, f"fix(io): bug {n}", {"io.py": str(n)})
    commit_at(ws, T0, "cache the index", {"cache.py": "x"})
    git(ws, "revert", "--no-edit", "HEAD")


def statuses(root: Path) -> dict[str, str]:
    return {str(r["id"]): str(r["status"]) for r in store.all_records(store.sidecar(root))}


def test_each_proposal_is_decided_by_its_answer(ws: Path) -> None:
    two_proposals(ws)
    asked: list[tuple[str, str]] = []

    def answer(kind: str, pid: str) -> bytes:
        asked.append((kind, pid))
        return {"playbook": b"a\n", "memory": b"r\n"}.get(kind, b"s\n")

    code, out = on_terminal(ws, answer)
    assert code == 0, out
    kinds = [k for k, _ in asked]
    assert "playbook" in kinds and "memory" in kinds
    assert kinds == sorted(kinds, key=["hygiene", "playbook", "memory", "skill"].index)
    final = statuses(ws)
    for kind, pid in asked:
        assert final[pid] == {"playbook": "applied", "memory": "rejected"}.get(kind, "open")
    [book] = [pid for kind, pid in asked if kind == "playbook"]
    assert git(ws, "rev-parse", "--verify", f"heartbeat/{book}").strip()
    assert f"apply  {book}: applied" in out


def test_no_answer_decides_nothing(ws: Path) -> None:
    two_proposals(ws)
    asked: list[str] = []

    def answer(kind: str, pid: str) -> bytes:
        asked.append(pid)
        return b"yes please\n" if len(asked) == 1 else b"\x04"  # not a choice, then end of input

    code, out = on_terminal(ws, answer)
    assert code == 0 and "answer one of" in out and "no decision taken" in out
    assert len(asked) == 2 and asked[0] == asked[1]  # the same question again
    assert set(statuses(ws).values()) == {"open"}
    assert "heartbeat/" not in git(ws, "branch", "--list")


def test_a_memory_line_applied_on_the_terminal_goes_to_the_private_memory(ws: Path) -> None:
    commit_at(ws, T0, "ignore private memory", {".gitignore": "heartbeat-reports/\nMEMORY.md\n"})
    commit_at(ws, T0, "cache the index", {"cache.py": "x"})
    git(ws, "revert", "--no-edit", "HEAD")
    shown: list[str] = []

    def answer(kind: str, pid: str) -> bytes:
        shown.append(kind)
        return b"a\n" if kind == "memory" else b"s\n"

    code, out = on_terminal(ws, answer, "--json")
    assert code == 0 and shown.count("memory") == 1  # "a" is offered for it and taken
    decisions = json.loads(out.strip().splitlines()[-1])["decisions"]
    [applied] = [d for d in decisions if d["answer"] == "apply"]
    assert applied["status"] == "applied" and applied["file"] == "MEMORY.md"
    assert "cache the index" in (ws / "MEMORY.md").read_text()
    assert "MEMORY.md" not in git(ws, "status", "--porcelain")


def test_deep_without_a_terminal_is_refused_and_changes_nothing(ws: Path) -> None:
    two_proposals(ws)
    proc = subprocess.run([str(STRATO), "heartbeat", "run", "--deep", "--root", str(ws)],
                          input="a\na\na\n", capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "terminal" in proc.stderr
    assert not store.sidecar(ws).exists()
