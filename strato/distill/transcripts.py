"""Tool calls out of agent transcripts, streamed: one line in memory at a time.

Shapes read (one JSON object per line; anything else on a line is counted, not fatal):

* Claude Code, ``~/.claude/projects/<cwd with / and . as ->/<session>.jsonl``: records
  ``{"type": "assistant", "sessionId", "timestamp", "cwd", "message": {"content": [...]}}``
  whose content items ``{"type": "tool_use", "name": "Bash", "input": {"command": ...}}``
  are the calls; ``user``, ``system``, ``summary`` and ``file-history-snapshot`` records
  are known and carry none.
* Codex, ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``: ``{"type": "session_meta",
  "payload": {"id", "cwd"}}`` first, then ``{"type": "response_item", "timestamp",
  "payload": {"type": "function_call", "name": "shell", "arguments": "<json: {command:
  [argv]}>"}}`` (or ``"custom_tool_call"`` with ``"input"``); ``event_msg``,
  ``turn_context`` and ``compacted`` are known and carry none.

A record of another ``type`` is skipped and counted by kind; a line that is not JSON
(a truncated last line), not UTF-8, or longer than ``MAX_LINE`` is skipped and counted.
Calls outside ``root`` (a transcript folder two repositories share) are left out.
"""

from __future__ import annotations

import datetime
import functools
import json
import shlex
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_LINE = 16 * 1024 * 1024
CLAUDE_KINDS = {"user", "assistant", "system", "summary", "file-history-snapshot"}
CODEX_KINDS = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_SHELLS = {"Bash", "shell", "exec_command", "local_shell", "container.exec"}
_TWO_WORD = {"git", "npm", "pnpm", "yarn", "cargo", "go", "uv", "pip", "docker", "gh", "make",
             "kubectl", "poetry", "dotnet", "bun", "just", "terraform", "brew", "apt-get"}


@dataclass(frozen=True)
class Call:
    """One tool call: its session, where it is (``file:line``), when, and its shape."""

    session: str
    handle: str  # ``<file name>:<line>``: no home path ever reaches a candidate
    time: float
    step: str  # the normalized shape, e.g. ``bash:git commit`` or ``Edit``
    text: str  # what was run, for the skill's examples (redacted before staging)


@dataclass
class Stats:
    files: int = 0
    lines: int = 0
    calls: int = 0
    malformed: int = 0  # not JSON: truncated or garbage
    not_utf8: int = 0
    oversized: int = 0
    foreign: int = 0  # calls made in another directory
    unknown_kinds: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"files": self.files, "lines": self.lines, "calls": self.calls,
                "malformed": self.malformed, "not_utf8": self.not_utf8, "oversized": self.oversized,
                "foreign": self.foreign, "unknown_kinds": dict(sorted(self.unknown_kinds.items()))}


@functools.lru_cache(maxsize=65536)
def shape(command: str) -> str:
    """``bash:<program>[ <subcommand>]`` of the first real command of a shell line
    (cached: sessions repeat the same commands, and shlex is slow)."""
    for part in command.replace("&&", ";").replace("||", ";").replace("|", ";").split(";"):
        try:
            words = shlex.split(part, comments=True) if any(c in part for c in "'\"\\#") else part.split()
        except ValueError:
            words = part.split()
        while words and (("=" in words[0] and not words[0].startswith("=")) or words[0] in ("sudo", "env")):
            words = words[1:]
        if not words or words[0] in ("cd", "pushd", "export", "set", "source", "."):
            continue
        prog = words[0].rsplit("/", 1)[-1]
        if prog in ("bash", "sh", "zsh") and len(words) > 2 and words[1] in ("-c", "-lc"):
            return shape(words[2])
        if prog.startswith("python") and len(words) > 2 and words[1] == "-m":
            return f"bash:python -m {words[2]}"
        sub = next((w for w in words[1:] if not w.startswith("-")), None)
        return f"bash:{prog} {sub}" if prog in _TWO_WORD and sub else f"bash:{prog}"
    return "bash:cd"


def _when(value: Any) -> float:
    if isinstance(value, str):
        try:
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0
    return 0.0


def _inside(cwd: Any, root: Path | None) -> bool:
    if root is None or not isinstance(cwd, str) or not cwd:
        return True
    return _under(cwd, root)


@functools.lru_cache(maxsize=4096)
def _under(cwd: str, root: Path) -> bool:
    path = Path(cwd)
    return path == root or root in path.parents


def _lines(path: Path, stats: Stats) -> Iterator[tuple[int, Any]]:
    with open(path, "rb") as fh:
        number = 0
        while True:
            line = fh.readline(MAX_LINE + 1)
            if not line:
                return
            number += 1
            stats.lines += 1
            if len(line) > MAX_LINE:
                stats.oversized += 1
                while line and not line.endswith(b"\n"):  # skip the rest of the giant line
                    line = fh.readline(MAX_LINE)
                continue
            try:
                yield number, json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                stats.not_utf8 += 1
            except ValueError:
                if line.strip():
                    stats.malformed += 1


def _claude_call(item: dict[str, Any]) -> tuple[str, str] | None:
    if item.get("type") != "tool_use" or not isinstance(item.get("name"), str):
        return None
    name, args = item["name"], item.get("input")
    if name in _SHELLS and isinstance(args, dict) and isinstance(args.get("command"), str):
        return shape(args["command"]), args["command"]
    return name, name


def claude(path: Path, root: Path | None, stats: Stats) -> Iterator[Call]:
    stats.files += 1
    for number, record in _lines(path, stats):
        if not isinstance(record, dict):
            stats.malformed += 1
            continue
        kind = record.get("type")
        if kind not in CLAUDE_KINDS:
            stats.unknown_kinds[str(kind)] += 1
            continue
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if kind != "assistant" or not isinstance(content, list):
            continue
        if not _inside(record.get("cwd"), root):
            stats.foreign += 1
            continue
        session = str(record.get("sessionId") or path.stem)
        for item in content:
            found = _claude_call(item) if isinstance(item, dict) else None
            if found:
                stats.calls += 1
                yield Call(f"claude:{session}", f"{path.name}:{number}",
                           _when(record.get("timestamp")), *found)


def _codex_call(payload: dict[str, Any]) -> tuple[str, str] | None:
    kind, name = payload.get("type"), payload.get("name")
    if kind not in ("function_call", "custom_tool_call") or not isinstance(name, str):
        return None
    if name in _SHELLS:
        try:
            args = json.loads(payload.get("arguments") or "{}")
        except (TypeError, ValueError):
            args = {}
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, list) and all(isinstance(w, str) for w in command):
            command = shlex.join(command)
        if isinstance(command, str):
            return shape(command), command
    return name, name


def codex(path: Path, root: Path | None, stats: Stats) -> Iterator[Call]:
    stats.files += 1
    session, inside = path.stem, True
    for number, record in _lines(path, stats):
        if not isinstance(record, dict):
            stats.malformed += 1
            continue
        kind, payload = record.get("type"), record.get("payload")
        if kind not in CODEX_KINDS:
            stats.unknown_kinds[str(kind)] += 1
            continue
        if not isinstance(payload, dict):
            continue
        if kind == "session_meta":
            session = str(payload.get("id") or session)
            inside = _inside(payload.get("cwd"), root)
            continue
        found = _codex_call(payload) if kind == "response_item" else None
        if found is None:
            continue
        if not inside:
            stats.foreign += 1
            continue
        stats.calls += 1
        yield Call(f"codex:{session}", f"{path.name}:{number}", _when(record.get("timestamp")), *found)


def claude_project_dir(claude_home: Path, root: Path) -> Path:
    """Where Claude Code (its config folder ``claude_home``) keeps the sessions started
    in ``root``: the path with every character but letters, digits and ``-`` as ``-``."""
    encoded = "".join(c if c.isalnum() or c == "-" else "-" for c in str(root))
    return claude_home / "projects" / encoded


def read_all(claude_dirs: list[Path], codex_dirs: list[Path], root: Path | None,
             stats: Stats) -> Iterator[Call]:
    """Every call in the ``*.jsonl`` files of the folders (recursively), file by file."""
    for folder in claude_dirs:
        for path in sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []:
            yield from claude(path, root, stats)
    for folder in codex_dirs:
        for path in sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []:
            yield from codex(path, root, stats)
