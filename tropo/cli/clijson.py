"""How our commands show an error, shared by tropo, exo, strato, vivary and create-vivary:
one line on stderr for people, usage errors included, and under `--json` also one object on
stdout, so a script that asked for JSON reads one object whatever happened."""

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


def echo_error(message: str, exit_code: int, code: str | None = None) -> None:
    """`{"ok": false, "error", "exitCode"}` on stdout, only under `--json`; with `code`, a
    refusal a script tells apart (`untrusted`), also `"code"`."""
    if json_requested():
        doc: dict[str, object] = {"ok": False, "error": message, "exitCode": exit_code}
        if code is not None:
            doc["code"] = code
        click.echo(json.dumps(doc, sort_keys=True))


def _wants_json(args: list[str]) -> bool:
    """`--json` among the words before a `--` (the only thing known when parsing itself fails)."""
    return "--json" in (args[: args.index("--")] if "--" in args else args)


class UsageLine(click.ClickException):
    """A click usage error re-shown as one line on stderr, `error: MESSAGE (see CMD --help)`,
    and, for a caller that asked for `--json`, also as the JSON object on stdout; the same
    exit code (2 for usage). Click's own display adds its usage text: three lines for one
    mistake."""

    def __init__(self, error: click.ClickException, as_json: bool, where: str) -> None:
        super().__init__(error.format_message())
        self.code = error.exit_code
        self.__dict__["exit_code"] = self.code  # what click exits with; its stubs type it class-wide
        ctx = getattr(error, "ctx", None)
        self.command_path = ctx.command_path if ctx is not None else where
        self.as_json = as_json

    def show(self, file: object = None) -> None:
        if self.as_json:
            payload = {"ok": False, "error": self.message, "exitCode": self.code}
            click.echo(json.dumps(payload, sort_keys=True))
        hint = f" (see {self.command_path} --help)" if self.command_path else ""
        click.echo(f"error: {self.message}{hint}", err=True)


def _one_line(error: click.ClickException, as_json: bool, where: str) -> click.ClickException:
    """What to raise for `error`: a usage error is always one line; any other click error
    already is, and changes only for `--json`. `where` names the command when click's
    parser failed before the error had a context."""
    if isinstance(error, UsageLine) or not (as_json or isinstance(error, click.UsageError)):
        return error
    return UsageLine(error, as_json, where)


class JsonErrorsGroup(click.Group):
    """The top group of each of our commands: usage errors anywhere below it (a missing
    option, a bad value, an unknown command) are one line, and follow `--json` like every
    other error."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        wants = _wants_json(list(args))
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except click.ClickException as error:
            raise _one_line(error, wants, info_name or self.name or "") from None
        ctx.meta[_META_KEY] = wants
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            raise _one_line(error, bool(ctx.meta.get(_META_KEY)), ctx.command_path) from None
