"""The error a command prints on stdout under `--json`, shared by tropo, exo and strato:
a script that asked for JSON reads one object whatever happened, while people still get
the one line on stderr."""

from __future__ import annotations

import json
from typing import Any

import click

_META_KEY = "vivary.json-errors"  # ctx.meta: the command line asked for --json


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


def _wants_json(args: list[str]) -> bool:
    """`--json` among the words before a `--` (the only thing known when parsing itself fails)."""
    return "--json" in (args[: args.index("--")] if "--" in args else args)


class JsonUsageError(click.ClickException):
    """A click error re-shown for a caller that asked for `--json`: the JSON object on
    stdout, one line on stderr, the same exit code (2 for usage)."""

    def __init__(self, error: click.ClickException) -> None:
        super().__init__(error.format_message())
        self.code = error.exit_code
        self.__dict__["exit_code"] = self.code  # what click exits with; its stubs type it class-wide
        ctx = getattr(error, "ctx", None)
        self.command_path = ctx.command_path if ctx is not None else ""

    def show(self, file: object = None) -> None:
        payload = {"ok": False, "error": self.message, "exitCode": self.code}
        click.echo(json.dumps(payload, sort_keys=True))
        hint = f" (see {self.command_path} --help)" if self.command_path else ""
        click.echo(f"error: {self.message}{hint}", err=True)


class JsonErrorsGroup(click.Group):
    """The top group of each of our commands: usage errors anywhere below it (a missing
    option, a bad value, an unknown command) follow `--json` like every other error."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        wants = _wants_json(list(args))
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except click.ClickException as error:
            if wants and not isinstance(error, JsonUsageError):
                raise JsonUsageError(error) from None
            raise
        ctx.meta[_META_KEY] = wants
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            if ctx.meta.get(_META_KEY) and not isinstance(error, JsonUsageError):
                raise JsonUsageError(error) from None
            raise
