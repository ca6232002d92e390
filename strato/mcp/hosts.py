"""Where Claude Code and Codex look for MCP servers, and how to add ours to what is
there: parse, merge, check that the merge kept everything else, then write (with a
backup). Pure functions over text; the CLI does the reading and writing."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAME = "strato"
HOSTS = ("claude", "codex")
DEFAULT_SCOPE = {"claude": "project", "codex": "user"}


class HostConfigError(Exception):
    """An existing configuration file we will not rewrite (malformed, or shaped oddly)."""


@dataclass(frozen=True)
class Target:
    host: str
    scope: str
    path: Path
    entry: dict[str, Any]  # {command, args}
    root: Path  # the workspace

    @property
    def base(self) -> Path:
        """What the entry's --root is relative to: a project file's workspace (the host
        starts the server there), else nothing (the root is absolute)."""
        return self.root if self.scope == "project" else Path("/")


def target(
    host: str, scope: str, root: Path, command: str, home: Path, env: dict[str, str],
    allow_commands: bool = False,
) -> Target:
    """The file a host reads for `scope`, and the entry that starts `strato mcp` on `root`.
    A project file is shared through git, so it names the root relatively (`.`, the
    folder the host starts the server in)."""
    if host == "claude":
        path = root / ".mcp.json" if scope == "project" else home / ".claude.json"
    else:
        codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        path = root / ".codex" / "config.toml" if scope == "project" else codex_home / "config.toml"
    where = "." if scope == "project" else str(root)
    args = ["mcp", "--root", where, *(["--allow-commands"] if allow_commands else [])]
    return Target(host, scope, path, {"command": command, "args": args}, root)


def current(t: Target, text: str | None) -> dict[str, Any] | None:
    """Our entry as the host would read it now (None: absent)."""
    servers = _servers(t, text)
    entry = servers.get(NAME)
    return entry if isinstance(entry, dict) else None


def _servers(t: Target, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        doc: Any = json.loads(text) if t.host == "claude" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        kind = "JSON" if t.host == "claude" else "TOML"
        raise HostConfigError(f"{t.path}: not valid {kind}: {exc}") from None
    if not isinstance(doc, dict):
        raise HostConfigError(f"{t.path}: the top level is not an object")
    key = "mcpServers" if t.host == "claude" else "mcp_servers"
    servers = doc.get(key, {})
    if not isinstance(servers, dict):
        raise HostConfigError(f"{t.path}: {key} is not a table of servers")
    return servers


def merged(t: Target, text: str | None) -> str:
    """The file with our entry set and everything else as it was."""
    before = _servers(t, text)
    out = _merge_json(text, t.entry) if t.host == "claude" else _merge_toml(text or "", t.entry)
    after = _servers(t, out)
    others = {k: v for k, v in after.items() if k != NAME}
    if others != {k: v for k, v in before.items() if k != NAME} or not _same(after.get(NAME), t.entry):
        raise HostConfigError(f"{t.path}: cannot merge into this layout; add [{NAME}] by hand")
    return out


def _same(entry: Any, want: dict[str, Any]) -> bool:
    return isinstance(entry, dict) and all(entry.get(k) == v for k, v in want.items())


def up_to_date(t: Target, text: str | None) -> bool:
    return _same(current(t, text), t.entry)


def _merge_json(text: str | None, entry: dict[str, Any]) -> str:
    doc = json.loads(text) if text and text.strip() else {}
    servers = doc.setdefault("mcpServers", {})
    servers[NAME] = {**servers.get(NAME, {}), **entry}  # keeps the user's env or other keys
    return json.dumps(doc, indent=2) + "\n"


_HEADER = re.compile(rf'^\s*\[\s*mcp_servers\s*\.\s*("{NAME}"|{NAME})\s*\]\s*(#.*)?$')
_ANY_HEADER = re.compile(r"^\s*\[")


def _toml(value: str | list[str]) -> str:
    """A TOML basic string (or array of them). JSON's quoting is TOML's, except that TOML
    has no surrogate pairs (so no ASCII-only escaping) and wants DEL escaped."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _merge_toml(text: str, entry: dict[str, Any]) -> str:
    """Replace the body of `[mcp_servers.strato]` (or append it); its subtables such as
    `.env` stay."""
    body = [f"command = {_toml(entry['command'])}", f"args = {_toml(entry['args'])}"]
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is None:
        lead = [*lines, ""] if lines and lines[-1].strip() else lines
        return "\n".join([*lead, f"[mcp_servers.{NAME}]", *body]) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if _ANY_HEADER.match(lines[i])), len(lines))
    kept = [line for line in lines[start + 1 : end] if not re.match(r"^\s*(command|args)\s*=", line)]
    return "\n".join([*lines[: start + 1], *body, *kept, *lines[end:]]) + "\n"



def removed(t: Target, text: str | None) -> str | None:
    """The file without our entry and everything else as it was (None: no entry to remove)."""
    before = _servers(t, text)
    if NAME not in before or text is None:
        return None
    out = _remove_json(text) if t.host == "claude" else _remove_toml(text)
    if _servers(t, out) != {k: v for k, v in before.items() if k != NAME}:
        raise HostConfigError(f"{t.path}: cannot remove [{NAME}] from this layout; remove it by hand")
    return out


def _remove_json(text: str) -> str:
    doc = json.loads(text)
    del doc["mcpServers"][NAME]
    return json.dumps(doc, indent=2) + "\n"


def _remove_toml(text: str) -> str:
    """Drop `[mcp_servers.strato]` and its subtables (`.env`), up to the next other table."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is None:
        return text  # an inline or dotted layout: `removed` refuses it
    own = re.compile(rf'^\s*\[\s*mcp_servers\s*\.\s*("{NAME}"|{NAME})\s*\.')
    end = next((i for i in range(start + 1, len(lines))
                if _ANY_HEADER.match(lines[i]) and not own.match(lines[i])), len(lines))
    kept = lines[:start] + lines[end:]
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept) + "\n" if kept else ""
