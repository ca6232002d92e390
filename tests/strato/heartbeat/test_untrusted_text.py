"""Issue 25, reproduction 6: a transcript names its tools, and those names reach the
person's terminal, the report, a committed SKILL.md and a commit message. Through the
real CLI: none of them holds an escape sequence, a key, or a heading the transcript wrote."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from strato.distill import transcripts
from strato.heartbeat import deep
from strato.proposals import store
from tests.support import console
from tests.support.repos import git
from tests.support.transcripts import claude_session

TOKEN = "ghp_" + "Zq3x" * 9
ERASE, CLIPBOARD = "\x1b[2K", "\x1b]52;c;cm0gLXJmIH4=\x07"
TOOL = f"Deploy{ERASE}{CLIPBOARD}{TOKEN}\n# Heading"
RAW = ("\x1b", "\x07", TOKEN, TOKEN.lower().replace("_", "-"), "Zq3x" * 9, "zq3x" * 9)


def heartbeat(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(home), "CODEX_HOME": str(home / "codex")}
    proc = console.run("strato", "heartbeat", *args, "--root", ws, env=env)  # a traceback raises
    assert proc.returncode == 0, proc.stderr
    return proc


def clean(text: str) -> None:
    """Nothing the transcript chose is there raw: no escape sequence, no key, no line
    that a Markdown renderer would take for the transcript's heading."""
    assert not [raw for raw in RAW if raw in text], text
    assert not [line for line in text.splitlines() if line.lstrip().startswith("# Heading")], text


def staged(ws: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """Two sessions of today that run the hostile tool three times, then one heartbeat."""
    home = tmp_path / "claude-home"
    folder = transcripts.claude_project_dir(home, ws.resolve())
    day = datetime.datetime.now(datetime.UTC).date().isoformat()
    flow = [("Bash", "git status"), (TOOL, None), ("Bash", "git commit -m x")]
    claude_session(folder, "s1", ws, [*flow, ("Read", None), *flow], day=day)
    claude_session(folder, "s2", ws, flow, day=day)
    return home, json.loads(heartbeat(ws, home, "run", "--json").stdout)


def test_a_hostile_tool_name_reaches_no_output_raw(ws: Path, tmp_path: Path) -> None:
    home, result = staged(ws, tmp_path)
    [pid] = [p for p in result["new"] if p.startswith("skill-")]
    clean(heartbeat(ws, home, "status").stdout)
    clean(heartbeat(ws, home, "show", pid).stdout)
    clean(Path(result["report"]).read_text())
    clean(deep.question(store.get(store.sidecar(ws), pid))[0])  # what `run --deep` asks
    applied = json.loads(heartbeat(ws, home, "apply", pid, "--json").stdout)
    clean(git(ws, "log", "-1", "--format=%B", applied["branch"]))
    paths = git(ws, "diff", "--name-only", "HEAD", applied["branch"])
    clean(paths)
    for path in paths.split():
        clean(git(ws, "show", f"{applied['branch']}:{path}"))
    assert "[REDACTED]" in heartbeat(ws, home, "show", pid).stdout


def test_a_hostile_revert_subject_reaches_no_output_raw(ws: Path, tmp_path: Path) -> None:
    """A memory line quotes a commit subject, which its author chose."""
    git(ws, "commit", "-q", "--allow-empty", "-m", f'Revert "ship {CLIPBOARD}{TOKEN}"\n\nThis reverts commit '
        f"{git(ws, 'rev-parse', 'HEAD').strip()}.")
    home = tmp_path / "claude-home"
    result = json.loads(heartbeat(ws, home, "run", "--json").stdout)
    [pid] = [p for p in result["new"] if p.startswith("memory-")]
    clean(heartbeat(ws, home, "status").stdout)
    clean(heartbeat(ws, home, "show", pid).stdout)
    clean(Path(result["report"]).read_text())


def test_distill_top_stats_and_extract_show_a_hostile_tool_name_as_text(ws: Path, tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    flow = [("Bash", "git status"), (TOOL, None), ("Bash", "git commit -m x")]
    claude_session(folder, "s1", ws, [*flow, ("Read", None), *flow])
    path = claude_session(folder, "s2", ws, flow)
    with open(path, "a") as fh:
        fh.write(json.dumps({"type": f"kind{CLIPBOARD}"}) + "\n")
    for command in ("top", "stats", "extract"):
        proc = console.run("strato", "distill", command, "--project", folder, "--root", ws)
        assert proc.returncode == 0, proc.stderr
        clean(proc.stdout)
    top = console.run("strato", "distill", "top", "--json", "--project", folder, "--root", ws)
    assert top.returncode == 0, top.stderr
    assert TOKEN not in top.stdout
