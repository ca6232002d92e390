"""The error a command prints on stdout under `--json`, shared by tropo, exo and strato:
a script that asked for JSON reads one object whatever happened, while people still get
the one line on stderr."""

from __future__ import annotations

import json

import click


def json_requested() -> bool:
    """Whether the command being run was given `--json` (read from click's context, so a
    shared failure path needs no flag threaded through it)."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if ctx.params.get("as_json") is True:
            return True
        ctx = ctx.parent
    return False


def echo_error(message: str, exit_code: int) -> None:
    """`{"ok": false, "error", "exitCode"}` on stdout, only under `--json`."""
    if json_requested():
        click.echo(json.dumps({"ok": False, "error": message, "exitCode": exit_code}, sort_keys=True))
