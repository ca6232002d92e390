"""The wizard on a real terminal (a pty, read and answered like a person would), and its
one-line refusal where no terminal is there to ask."""

from __future__ import annotations

import json
import os
import select
import subprocess
from collections.abc import Callable
from pathlib import Path

from create_vivary.thin import MEMORY_RULES
from tests.support.cli import run_cli
from tests.support.console import BIN
from tests.support.sides import served


class Terminal:
    """A command running on a pseudo-terminal: stdin, stdout and stderr all the pty."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=slave, stdout=slave, stderr=slave,
                                     close_fds=True)
        os.close(slave)
        self.seen = ""

    def expect(self, text: str) -> None:
        """Read until ``text`` shows; the command's exit ends the wait (and fails it)."""
        while text not in self.seen:
            ready, _, _ = select.select([self.master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(self.master, 4096).decode()
                except OSError:  # the child closed the pty
                    chunk = ""
                if not chunk and self.proc.poll() is not None:
                    raise AssertionError(f"exited before {text!r}; saw {self.seen!r}")
                self.seen += chunk
            elif self.proc.poll() is not None:
                raise AssertionError(f"exited before {text!r}; saw {self.seen!r}")

    def answer(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self) -> int:
        code = self.proc.wait()
        try:
            while chunk := os.read(self.master, 4096).decode():
                self.seen += chunk
        except OSError:
            pass
        os.close(self.master)
        return code


def test_init_minimal_at_a_terminal_asks_and_writes_the_answers(tmp_path: Path) -> None:
    term = Terminal([str(BIN / "create-vivary"), "init", "ws", "--minimal"], tmp_path)
    term.expect("How big will this workspace grow?")
    term.expect("choice [1]: ")
    term.answer("3")
    term.expect("Where should searchable context live?")
    term.answer("3")
    term.expect("Which cloud service?")
    term.answer("2")
    term.expect("Semantic memory?")
    term.answer("2")
    assert term.finish() == 0, term.seen
    assert "wrote 7 file(s)" in term.seen
    ws = tmp_path / "ws"
    assert 'provider = "astra"' in (ws / ".vivary/storage.toml").read_text()
    assert 'provider = "vivary-local"' in (ws / ".vivary/memory.toml").read_text()
    assert (ws / ".gitignore").read_text().endswith(MEMORY_RULES)


def test_a_small_workspace_is_asked_only_about_memory_and_enter_takes_the_defaults(
    tmp_path: Path,
) -> None:
    term = Terminal([str(BIN / "create-vivary"), "init", "ws", "--minimal"], tmp_path)
    term.expect("choice [1]: ")
    term.answer("")
    term.expect("Semantic memory?")
    term.answer("")
    assert term.finish() == 0, term.seen
    assert "Where should" not in term.seen
    assert sorted(p.name for p in (tmp_path / "ws" / ".vivary").iterdir()) == [
        "context.md", "workspace.toml"]


def test_the_wizard_command_reconfigures_a_workspace_at_a_terminal(tmp_path: Path) -> None:
    assert run_cli("create-vivary", "init", "ws", "--minimal", cwd=tmp_path).returncode == 0
    term = Terminal([str(BIN / "create-vivary"), "wizard", "ws", "--json"], tmp_path)
    term.expect("choice [1]: ")
    term.answer("2")
    term.expect("Where should searchable context live?")
    term.answer("2")
    term.expect("Semantic memory?")
    term.answer("1")
    assert term.finish() == 0, term.seen
    report = json.loads(term.seen[term.seen.index("{"):].replace("\r\n", "\n"))
    assert (report["storage"], report["provider"], report["memory"]) == ("embedded", "lancedb", "none")
    assert report["installed"] == []  # a choice writes its config; nothing is pip-installed
    assert 'backend = "embedded"' in (tmp_path / "ws/.vivary/storage.toml").read_text()


def test_without_a_terminal_the_wizard_refuses_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    assert run_cli("create-vivary", "init", "ws", "--minimal", cwd=tmp_path).returncode == 0
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = subprocess.run([str(BIN / "create-vivary"), "wizard", "ws"], cwd=tmp_path,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "terminal" in proc.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_without_a_terminal_init_minimal_asks_nothing(tmp_path: Path) -> None:
    proc = subprocess.run([str(BIN / "create-vivary"), "init", "ws", "--minimal"], cwd=tmp_path,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stderr == ""
    assert not (tmp_path / "ws/.vivary/storage.toml").exists()


def test_a_memory_policy_from_the_wizard_passes_both_doctors(
    tmp_path: Path, upstream: Callable[[str], Path]
) -> None:
    assert run_cli("create-vivary", "init", "ws", "--minimal", cwd=tmp_path).returncode == 0
    proc = run_cli("create-vivary", "wizard", "ws", "--no-wizard", "--memory", "cognee", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ws/.gitignore").read_text().endswith(MEMORY_RULES)
    again = run_cli("create-vivary", "wizard", "ws", "--no-wizard", "--memory", "local", cwd=tmp_path)
    assert again.returncode == 0 and (tmp_path / "ws/.gitignore").read_text().count(MEMORY_RULES) == 1
    ours = run_cli("create-vivary", "doctor", "ws", "--json", cwd=tmp_path)
    theirs = served(upstream("create-vivary"), ["doctor", "ws", "--json"], tmp_path)
    for doctor in (ours, theirs):
        assert doctor.returncode == 0 and json.loads(doctor.stdout)["errors"] == [], doctor.args
