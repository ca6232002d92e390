"""Transcript fixtures in the documented shapes (see strato/distill/transcripts.py)."""

from __future__ import annotations

import json
from pathlib import Path

from strato.distill import service


def claude_line(session: str, cwd: Path, stamp: str, tool: str, command: str | None = None) -> str:
    item: dict[str, object] = {"type": "tool_use", "id": f"toolu_{stamp}", "name": tool,
                               "input": {"command": command} if command else {"file_path": "x.py"}}
    return json.dumps({"type": "assistant", "sessionId": session, "timestamp": stamp, "cwd": str(cwd),
                       "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}, item]}})


def claude_session(folder: Path, session: str, cwd: Path, calls: list[tuple[str, str | None]],
                   day: str = "2026-11-30") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "user", "sessionId": session, "timestamp": f"{day}T00:00:00Z",
                         "cwd": str(cwd), "message": {"role": "user", "content": "go"}})]
    lines += [claude_line(session, cwd, f"{day}T00:{i:02d}:00Z", tool, cmd) for i, (tool, cmd) in enumerate(calls)]
    path = folder / f"{session}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def codex_session(folder: Path, session: str, cwd: Path, commands: list[str],
                  day: str = "2026-11-30") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"timestamp": f"{day}T00:00:00Z", "type": "session_meta",
                         "payload": {"id": session, "cwd": str(cwd), "originator": "codex_cli_rs"}})]
    for i, command in enumerate(commands):
        args = json.dumps({"command": ["bash", "-lc", command], "workdir": str(cwd)})
        lines.append(json.dumps({"timestamp": f"{day}T00:{i:02d}:30Z", "type": "response_item",
                                 "payload": {"type": "function_call", "name": "shell", "arguments": args,
                                             "call_id": f"call_{i}"}}))
    path = folder / f"rollout-{day}-{session}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


FLOW = [("Bash", "git status"), ("Bash", "pytest -q tests"), ("Bash", "git commit -m 'wip'")]


OTHER = [("Read", None)]


def sources(tmp_path: Path) -> service.Sources:
    return service.Sources([tmp_path / "claude"], [tmp_path / "codex"])
