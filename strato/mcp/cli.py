"""`strato mcp`: start the MCP server on stdio. The SDK is imported only here, and only
when the command runs, so the rest of strato works without the optional extra."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

import click

from strato.mcp.tools import Context
from tropo.git.repo import NotARepository, require, workdir

INSTALL_HINT = "strato mcp needs the MCP SDK: pip install 'vivary-git[mcp]'"


def _fail(message: str, code: str, as_json: bool) -> NoReturn:
    if as_json:  # the server never started, so stdout is not yet the protocol channel
        click.echo(json.dumps({"ok": False, "error": message, "code": code}, sort_keys=True))
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.command("mcp")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The workspace (any folder inside its git repository); fixed for the session.",
)
@click.option("--json", "as_json", is_flag=True, help="Report a failure to start as one JSON object.")
def mcp_command(root: Path, as_json: bool) -> None:
    """Serve the workspace's flows, gates, guard, decisions and graph as MCP tools on
    stdin/stdout, for Claude Code, Codex or any MCP host. Exit 2 when it cannot start.

    \b
    Example (.mcp.json):
      {"mcpServers": {"strato": {"command": "strato", "args": ["mcp", "--root", "."]}}}
    """
    try:
        repo = require(root)
    except NotARepository as exc:
        _fail(f"{exc}; pass --root inside the workspace", "not_a_repository", as_json)
    try:
        from strato.mcp.server import serve
    except ImportError as exc:  # the SDK, or a package it needs, is missing or broken
        missing = exc.name or ""
        if missing.partition(".")[0] in ("strato", "tropo"):
            raise  # our own module: a bug, not an installation problem
        detail = "" if missing.startswith("mcp") else f" (it cannot import {missing or exc})"
        _fail(INSTALL_HINT + detail, "mcp_not_installed", as_json)
    serve(Context(workdir(repo).resolve()))
