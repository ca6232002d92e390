"""`strato mcp`: start the MCP server on stdio. The SDK is imported only here, and only
when the command runs, so the rest of strato works without the optional extra."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from strato.mcp import guidance, hosts
from strato.mcp.registry import Context
from tropo.console import fail
from tropo.distribution import extra_command
from tropo.fs.atomic import write_atomic
from tropo.git.repo import NotARepository, private_dir, require, workdir
from tropo.git.types import Repository


def _sdk_installed() -> bool:
    """Whether the SDK itself is there: without it, the first import to fail may be one of
    its dependencies (anyio), and naming that would send the user after the wrong package."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except ImportError:
        return False


@click.group("mcp", invoke_without_command=True)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The workspace (any folder inside its git repository); fixed for the session.",
)
@click.option("--json", "as_json", is_flag=True, help="Report a failure to start as one JSON object.")
@click.option(
    "--allow-commands", is_flag=True,
    help="Let MCP clients run the shell commands of the specs they send (evaluate: steps, "
    "pre_merge); without it such a spec is refused.",
)
@click.pass_context
def mcp_command(ctx: click.Context, root: Path, as_json: bool, allow_commands: bool) -> None:
    """Serve the workspace's flows, gates, guard, decisions and graph as MCP tools on
    stdin/stdout, for Claude Code, Codex or any MCP host. Exit 2 when it cannot start.
    A spec a client sends runs no shell command unless you pass --allow-commands.

    \b
    Example (.mcp.json):
      {"mcpServers": {"strato": {"command": "strato", "args": ["mcp", "--root", "."]}}}
    Set up a host: strato mcp install --host claude; check it: strato mcp doctor.
    """
    if ctx.invoked_subcommand is not None:
        return
    try:
        repo = require(root)
    except NotARepository as exc:
        fail(f"{exc}; pass --root inside the workspace", code="not_a_repository", prog="error")
    try:
        from strato.mcp.server import serve
    except ImportError as exc:  # the SDK, or a package it needs, is missing or broken
        missing = exc.name or ""
        if missing.partition(".")[0] in ("strato", "tropo"):
            raise  # our own module: a bug, not an installation problem
        sdk_only = missing.startswith("mcp") or not _sdk_installed()
        detail = "" if sdk_only else f" (it cannot import {missing or exc})"
        fail(f"strato mcp needs the MCP SDK: {extra_command('mcp')}{detail}", code="mcp_not_installed",
             prog="error")
    serve(Context(workdir(repo).resolve(), allow_commands=allow_commands))


_HOST = click.option(
    "--host", type=click.Choice(hosts.HOSTS), required=True, help="The MCP host to configure."
)
_SCOPE = click.option(
    "--scope", type=click.Choice(["project", "user"]), default=None,
    help="project: .mcp.json / .codex/config.toml in the workspace; user: ~/.claude.json / "
    "~/.codex/config.toml. Default: project for claude, user for codex.",
)
_ROOT = click.option(
    "--root", "where", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
    show_default=True, help="The workspace the server is for.",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object (stable keys).")


def _repo(where: Path) -> Repository:
    try:
        repo = require(where)
        workdir(repo)
    except NotARepository as exc:
        fail(f"{exc}; pass --root inside the workspace", code="not_a_repository", prog="error")
    return repo


def _target(
    host: str, scope: str | None, repo: Repository, command: str, allow_commands: bool = False
) -> hosts.Target:
    scope = scope or hosts.DEFAULT_SCOPE[host]
    return hosts.target(host, scope, workdir(repo), command, Path.home(), dict(os.environ), allow_commands)


def running_strato() -> str:
    """The absolute path of the `strato` this process runs as, so a host finds it without
    the venv on PATH (a symlink, such as pipx's, is kept: it survives an upgrade); `strato`
    when there is none (run as `python -m strato.cli` from an interpreter without it)."""
    for script in (Path(sys.argv[0]), Path(sys.executable).parent / "strato"):
        if script.name == "strato" and script.is_file() and os.access(script, os.X_OK):
            return os.path.abspath(script)
    return "strato"


def _backup_path(t: hosts.Target, repo: Repository) -> Path:
    """Where the previous file is kept: beside a user's file, but in the repository's
    private folder for a workspace file, so no stray copy shows up in `git status`."""
    if t.scope == "user":
        return t.path.with_name(t.path.name + ".strato-backup")
    return private_dir(repo) / "mcp" / f"{t.host}-{t.path.name}.strato-backup"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: {exc}", code="unreadable", prog="error")


@mcp_command.command("install")
@_HOST
@_SCOPE
@click.option("--command", "command", metavar="PATH",
              help="How the host starts strato (default: the absolute path of this strato).")
@click.option("--allow-commands", is_flag=True,
              help="Start the server with --allow-commands (flows may run their commands).")
@click.option("--uninstall", is_flag=True,
              help="Remove the `strato` server entry and the execution-model block instead.")
@click.option("--dry-run", is_flag=True, help="Show what would be written; change nothing.")
@_ROOT
@_JSON
def install(host: str, scope: str | None, command: str | None, allow_commands: bool, uninstall: bool,
            dry_run: bool, where: Path, as_json: bool) -> None:
    """Add (or update) the `strato` server in the host's MCP configuration, keeping its
    other servers, and the execution-model block (write a spec, call stratum_plan,
    stratum_step_done, stratum_audit) between its markers in the workspace's CLAUDE.md
    (claude) or AGENTS.md (codex), keeping every other line. The entry names this strato
    by its absolute path, so the host finds it without the venv on PATH. The previous
    configuration is kept (a user file's beside it, a workspace file's under
    .git/vivary/mcp/). Running it twice changes nothing the second time; --uninstall
    takes both out again. Exit 2 when an existing file is malformed.

    \b
    Examples:
      strato mcp install --host claude            # .mcp.json and CLAUDE.md in the workspace
      strato mcp install --host codex --dry-run   # ~/.codex/config.toml and AGENTS.md
      strato mcp install --host claude --command strato --allow-commands
      strato mcp install --host claude --uninstall
    """
    repo = _repo(where)
    t = _target(host, scope, repo, command or running_strato(), allow_commands)
    text = _read(t.path)
    notes = workdir(repo) / guidance.FILES[host]
    if notes.is_symlink():  # the work tree is a branch's to choose: never write through its link
        fail(f"{notes} is a symbolic link; not following it", code="malformed_config", prog="error")
    notes_text = _read(notes)
    try:
        if uninstall:
            new = hosts.removed(t, text)
            changed = new is not None
            new_notes = guidance.without_block(notes_text)
        else:
            changed = not hosts.up_to_date(t, text)
            new = hosts.merged(t, text) if changed else text
            new_notes = guidance.with_block(notes_text)
    except hosts.HostConfigError as exc:
        fail(str(exc), code="malformed_config", prog="error")
    except guidance.BlockError as exc:
        fail(f"{notes}: {exc}", code="malformed_config", prog="error")
    notes_changed = new_notes is not None and new_notes != notes_text
    backup = _backup_path(t, repo) if changed and text is not None else None
    if not dry_run:
        if changed:
            if backup is not None:
                backup.parent.mkdir(parents=True, exist_ok=True)
                backup.write_text(text or "", encoding="utf-8")
            _replace(t.path, new or "")
        if notes_changed:
            _replace(notes, new_notes or "")
    doc = {"host": host, "scope": t.scope, "path": str(t.path), "entry": t.entry, "changed": changed,
           "created": changed and text is None and not uninstall, "dryRun": dry_run,
           "backup": None if backup is None else str(backup), "uninstall": uninstall,
           "instructions": {"path": str(notes), "changed": notes_changed}}
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
    elif dry_run:
        click.echo(f"would write {t.path}:\n{new}" if changed else f"{t.path}: {_unchanged(uninstall)}")
        click.echo(f"would {'remove' if uninstall else 'write'} the execution-model block in {notes}"
                   if notes_changed else f"{notes}: {_unchanged(uninstall)}")
    else:
        if uninstall:
            click.echo(f"{t.path}: {'removed' if changed else _unchanged(True)}")
        else:
            click.echo(f"{t.path}: {_outcome(changed, text is None)}")
        done = "block removed" if uninstall else "block written"
        click.echo(f"{notes}: {done if notes_changed else _unchanged(uninstall)}")


def _unchanged(uninstall: bool) -> str:
    return "nothing to remove" if uninstall else "already set up"


def _replace(path: Path, text: str) -> None:
    """Write ``text`` whole (its mode kept), or remove the file when nothing is left of it."""
    if not text:
        path.unlink(missing_ok=True)
        return
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    write_atomic(path, text.encode("utf-8"), mode=mode)


def _outcome(changed: bool, created: bool) -> str:
    return ("created" if created else "updated") if changed else "already set up"


@mcp_command.command("doctor")
@click.option("--host", type=click.Choice(hosts.HOSTS), default=None, help="Check one host only.")
@_SCOPE
@_ROOT
@_JSON
def doctor(host: str | None, scope: str | None, where: Path, as_json: bool) -> None:
    """Say whether each host will find this workspace's server: its configuration has a
    `strato` entry, the entry's command is on PATH, and its --root is this workspace.
    Exit 0 when at least one host is ready and none is misconfigured, else 1.

    \b
    Example:
      strato mcp doctor --json
    """
    checks = []
    repo = _repo(where)
    for h in [host] if host else list(hosts.HOSTS):
        for s in [scope] if scope else ["project", "user"]:
            t = _target(h, s, repo, "strato")
            try:
                entry = hosts.current(t, _read(t.path))
            except hosts.HostConfigError as exc:
                problem = {"ready": False, "problem": str(exc), "command": None}
                checks.append({"host": h, "scope": s, "path": str(t.path), **problem})
                continue
            if entry is None:
                continue
            checks.append({"host": h, "scope": s, "path": str(t.path), **_diagnose(t, entry)})
    ok = bool(checks) and all(c["ready"] for c in checks)
    if as_json:
        click.echo(json.dumps({"ok": ok, "checks": checks}, sort_keys=True))
    else:
        for c in checks:
            click.echo(f"{c['host']} ({c['scope']}, {c['path']}): {'ready' if c['ready'] else c['problem']}")
        if not checks:
            click.echo("no host is configured: run strato mcp install --host claude|codex", err=True)
    if not ok:
        sys.exit(1)


def _diagnose(t: hosts.Target, entry: dict[str, Any]) -> dict[str, Any]:
    """Is the entry's command found, and does its --root lead to this workspace?"""
    command, args = entry.get("command"), entry.get("args")
    found = shutil.which(command) if isinstance(command, str) else None
    problem = None
    if found is None:
        absolute = isinstance(command, str) and os.path.isabs(command)
        problem = f"command {command!r} {'is not an executable file' if absolute else 'is not on PATH'}"
    elif not isinstance(args, list) or args[:2] != ["mcp", "--root"] or len(args) < 3:
        problem = f"args {args!r} do not start strato mcp --root"
    else:
        here = t.root.resolve()
        if (t.base / str(args[2])).resolve() != here:
            problem = f"--root {args[2]} is not this workspace ({here})"
    return {"ready": problem is None, "problem": problem, "command": found}
