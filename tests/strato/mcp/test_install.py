"""`strato mcp install` and `strato mcp doctor` on real files in a temporary HOME; the
written configuration is then used the way the host would: its command, started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import console

BIN = Path(sys.executable).parent


def strato(root: Path, *args: str, path: str | None = None) -> tuple[int, Any, str]:
    """`strato mcp ARGS --root ROOT --json` in process, with `path` as its PATH."""
    env = {"PATH": path if path is not None else f"{BIN}:{os.environ.get('PATH', '')}"}
    proc = console.run("strato", "mcp", *args, "--root", root, "--json", env=env)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def test_claude_project_config_is_merged_idempotently_with_a_backup(repo_dir: Path) -> None:
    mine = {"mcpServers": {"other": {"command": "other-server", "args": ["--x"]}}, "keep": [1, 2]}
    (repo_dir / ".mcp.json").write_text(json.dumps(mine))
    code, doc, _ = strato(repo_dir, "install", "--host", "claude")
    assert code == 0 and doc["changed"] and doc["path"] == str(repo_dir / ".mcp.json")
    written = json.loads((repo_dir / ".mcp.json").read_text())
    assert written["mcpServers"]["other"] == mine["mcpServers"]["other"] and written["keep"] == [1, 2]
    assert written["mcpServers"]["strato"] == {"command": str(BIN / "strato"), "args": ["mcp", "--root", "."]}
    assert json.loads(Path(doc["backup"]).read_text()) == mine and not doc["created"]
    assert Path(doc["backup"]).is_relative_to(repo_dir / ".git")  # no stray copy in the work tree
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo_dir, capture_output=True,
                            text=True, check=True).stdout
    assert "backup" not in status and ".mcp.json" in status

    before = (repo_dir / ".mcp.json").read_bytes()
    code, again, _ = strato(repo_dir, "install", "--host", "claude")
    assert code == 0 and not again["changed"] and (repo_dir / ".mcp.json").read_bytes() == before

    code, report, _ = strato(repo_dir, "doctor", "--host", "claude")
    assert code == 0 and report["ok"]
    (check,) = report["checks"]
    assert check["ready"] and check["command"] == str(BIN / "strato")


def test_codex_user_config_keeps_the_users_servers_and_settings(repo_dir: Path, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\n\n[mcp_servers.other]\ncommand = "x"\n\n'
                      '[mcp_servers.strato]\ncommand = "old"\nargs = ["old"]\nstartup_timeout_sec = 20\n\n'
                      '[mcp_servers.strato.env]\nTOKEN_FILE = "t"\n')
    original = tomllib.loads(config.read_text())
    code, dry, _ = strato(repo_dir, "install", "--host", "codex", "--dry-run")
    assert code == 0 and dry["changed"] and tomllib.loads(config.read_text()) == original

    code, doc, _ = strato(repo_dir, "install", "--host", "codex")
    assert code == 0 and doc["scope"] == "user"
    after = tomllib.loads(config.read_text())
    assert after["model"] == "o3" and after["mcp_servers"]["other"] == {"command": "x"}
    assert after["mcp_servers"]["strato"] == {
        "command": str(BIN / "strato"), "args": ["mcp", "--root", str(repo_dir.resolve())],
        "startup_timeout_sec": 20, "env": {"TOKEN_FILE": "t"},
    }
    assert tomllib.loads(Path(doc["backup"]).read_text()) == original
    assert strato(repo_dir, "install", "--host", "codex")[1]["changed"] is False


def _handshake(entry: dict[str, Any], cwd: Path, path: str | None = None) -> str:
    """Start the entry as a host does (its command found on PATH, from `cwd`) and shake
    hands over MCP: the name the server gives."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "PATH": path if path is not None else f"{BIN}:{os.environ.get('PATH', '')}"}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(cwd))

    async def main() -> str:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return (await session.initialize()).server_info.name

    return anyio.run(main)


def test_claude_user_and_codex_project_scopes_write_entries_the_host_can_start(
    repo_dir: Path, tmp_path: Path
) -> None:
    claude = Path(os.environ["HOME"]) / ".claude.json"  # Claude Code keeps its own state here too
    theirs = {"numStartups": 3, "projects": {"/elsewhere": {"allowedTools": []}}}
    claude.write_text(json.dumps(theirs))
    code, dry, _ = strato(repo_dir, "install", "--host", "claude", "--scope", "user", "--dry-run")
    assert code == 0 and dry["changed"] and dry["dryRun"] and json.loads(claude.read_text()) == theirs
    code, doc, _ = strato(repo_dir, "install", "--host", "claude", "--scope", "user")
    written = json.loads(claude.read_text())
    assert code == 0 and {k: v for k, v in written.items() if k != "mcpServers"} == theirs
    entry = written["mcpServers"]["strato"]
    assert entry == {"command": str(BIN / "strato"), "args": ["mcp", "--root", str(repo_dir.resolve())]}
    assert _handshake(entry, tmp_path, path="/usr/bin:/bin") == "strato"  # no venv on PATH, any folder

    code, doc, _ = strato(repo_dir, "install", "--host", "codex", "--scope", "project")
    assert code == 0 and doc["path"] == str(repo_dir / ".codex" / "config.toml")
    text = (repo_dir / ".codex" / "config.toml").read_text()
    codex = tomllib.loads(text)["mcp_servers"]["strato"]
    assert codex["args"] == ["mcp", "--root", "."] and str(repo_dir) not in text  # shared through git
    assert doc["created"] and doc["backup"] is None
    (repo_dir / "sub").mkdir()
    assert _handshake(codex, repo_dir / "sub", path="/usr/bin:/bin") == "strato"  # from the project
    code, project, _ = strato(repo_dir, "install", "--host", "claude")  # `--root .`: from the project
    assert code == 0 and _handshake(project["entry"], repo_dir) == "strato"
    code, report, _ = strato(repo_dir, "doctor")
    assert code == 0 and report["ok"] and len(report["checks"]) == 3


@pytest.mark.parametrize(("host", "name", "text"), [
    ("claude", ".mcp.json", "{not json"),
    ("claude", ".mcp.json", "[1, 2]"),
    ("claude", ".mcp.json", '{"mcpServers": []}'),
    ("codex", ".codex/config.toml", "[mcp_servers\n"),
    ("codex", ".codex/config.toml", 'mcp_servers = "no"\n'),
    ("codex", ".codex/config.toml", 'mcp_servers = { strato = { command = "x" } }\n'),
])
def test_a_file_it_cannot_merge_is_refused_and_left_alone(repo_dir: Path, host: str, name: str, text: str) -> None:
    path = repo_dir / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    listing = sorted(path.parent.iterdir())
    code, doc, err = strato(repo_dir, "install", "--host", host, "--scope", "project")
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and str(path) in err
    assert doc is not None and doc["ok"] is False and doc["error"]["code"] == "malformed_config"
    assert path.read_text() == text and sorted(path.parent.iterdir()) == listing  # no backup, no temp file


def test_doctor_says_what_is_wrong(repo_dir: Path, tmp_path: Path) -> None:
    code, report, _ = strato(repo_dir, "doctor")
    assert code == 1 and report == {"ok": False, "checks": []}
    strato(repo_dir, "install", "--host", "claude", "--command", "strato")
    code, report, _ = strato(repo_dir, "doctor", path=str(tmp_path))  # an empty PATH: no strato
    assert code == 1 and "not on PATH" in report["checks"][0]["problem"]
    strato(repo_dir, "install", "--host", "claude", "--command", str(tmp_path / "gone" / "strato"))
    code, report, _ = strato(repo_dir, "doctor")
    assert code == 1 and "is not an executable file" in report["checks"][0]["problem"]

    other = tmp_path / "elsewhere"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    strato(other, "install", "--host", "codex", "--scope", "user")  # user scope, pointing at `other`
    code, report, _ = strato(repo_dir, "doctor", "--host", "codex")
    assert code == 1 and "is not this workspace" in report["checks"][0]["problem"]


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(servers=st.dictionaries(_names.filter(lambda n: n != "strato"), st.fixed_dictionaries(
    {"command": _names, "args": st.lists(_names, max_size=3)}), max_size=4))
def test_any_other_codex_servers_survive_the_merge(repo_dir: Path, servers: dict[str, Any]) -> None:
    from strato.mcp import hosts

    lines = []
    for name, entry in servers.items():
        q = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731 - TOML quoting for printable text
        lines += [f"[mcp_servers.{q(name)}]", f"command = {q(entry['command'])}", f"args = {q(entry['args'])}", ""]
    text = "\n".join(lines)
    assert tomllib.loads(text)["mcp_servers"] == servers if servers else True
    t = hosts.target("codex", "user", repo_dir, "strato", repo_dir, {})
    out = tomllib.loads(hosts.merged(t, text))["mcp_servers"]
    assert {k: v for k, v in out.items() if k != "strato"} == servers
    assert out["strato"] == t.entry


def test_odd_characters_in_the_entry_are_quoted_for_toml(tmp_path: Path) -> None:
    from strato.mcp import hosts

    root = tmp_path / 'a "b" \\ \x7f \U00010000 \t'
    t = hosts.target("codex", "user", root, "str\x7fato", tmp_path, {})
    assert tomllib.loads(hosts.merged(t, ""))["mcp_servers"]["strato"] == t.entry


def test_install_says_created_and_writes_allow_commands_only_when_asked(repo_dir: Path) -> None:
    proc = subprocess.run([BIN / "strato", "mcp", "install", "--host", "claude", "--root", str(repo_dir)],
                          capture_output=True, text=True, check=False, env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0
    assert proc.stdout == f"{repo_dir / '.mcp.json'}: created\n{repo_dir / 'CLAUDE.md'}: block written\n"
    entry = json.loads((repo_dir / ".mcp.json").read_text())["mcpServers"]["strato"]
    assert entry == {"command": str(BIN / "strato"), "args": ["mcp", "--root", "."]}  # found without PATH
    code, doc, _ = strato(repo_dir, "install", "--host", "claude", "--allow-commands")
    assert code == 0 and doc["changed"] and not doc["created"]
    entry = json.loads((repo_dir / ".mcp.json").read_text())["mcpServers"]["strato"]
    assert entry["args"] == ["mcp", "--root", ".", "--allow-commands"]
    code, doc, _ = strato(repo_dir, "install", "--host", "claude")
    assert doc["changed"] and doc["entry"]["args"] == ["mcp", "--root", "."]
