"""How every command of ours talks to a terminal and to a script, in one place: a document
under `--json` and lines otherwise, a failure as one line on stderr, the exit codes, and
the one JSON error document, so a script that asked for JSON reads one object whatever
happened and one shape whichever command it ran.

The error document is `{"ok": false, "error": {"code", "message"}, "exitCode"}`. A
command whose published error document differs keeps it: create-vivary's is
`{"ok": false, "error": "<message>"}` (the suite's create-vivary 0.3), marked on its top
group (`JsonErrorsGroup.error_as_text`); governed refusals, Stratum's guard envelope and
the flow validator's report are documents of their own commands, printed by them."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, NoReturn

import click

from tropo import untrusted

OK = 0
REFUSED = 1  # a refused action, or findings
USAGE = 2  # a usage or configuration error

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


def _error_as_text() -> bool:
    """Whether the running command's published error document carries the message as a
    string (create-vivary's), read from its top group."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    return bool(getattr(ctx.find_root().command, "error_as_text", False))


def error_document(message: str, exit_code: int, code: str | None = None, **detail: Any) -> dict[str, Any]:
    """The JSON error document: `code` names the failure for a script (by default what the
    exit code means), `detail` adds what a script needs to act on it (`candidates`, ...)."""
    return _document(message, exit_code, code, _error_as_text(), detail)


def _document(message: str, exit_code: int, code: str | None, as_text: bool,
              detail: dict[str, Any]) -> dict[str, Any]:
    if as_text:
        return {"ok": False, "error": message, "exitCode": exit_code, **detail}
    kind = code or ("usage" if exit_code == USAGE else "refused")
    return {"ok": False, "error": {"code": kind, "message": message, **detail}, "exitCode": exit_code}


def echo_error(message: str, exit_code: int, code: str | None = None, **detail: Any) -> None:
    """The error document on stdout, only under `--json`."""
    if json_requested():
        click.echo(json.dumps(error_document(message, exit_code, code, **detail), sort_keys=True))


def fail(message: str, exit_code: int = USAGE, *, code: str | None = None, prog: str | None = None,
         **detail: Any) -> NoReturn:
    """Stop the command: the error document under `--json`, then as `stop`."""
    echo_error(message, exit_code, code, **detail)
    stop(message, exit_code, prog=prog)


def stop(message: str, exit_code: int, *, prog: str | None = None) -> NoReturn:
    """One line `PROG: MESSAGE` on stderr (hidden characters shown, since messages quote
    what others wrote) and the exit code; alone, it ends a failure whose document the
    command printed itself (a governed refusal, Stratum's guard envelope, the validator's
    report). `prog` is by default the name of the command's own console script (`tropo`,
    `exo`, `create-vivary`: its top group's name), also when the front door runs it."""
    if prog is None:
        ctx = click.get_current_context(silent=True)
        prog = (ctx.find_root().command.name if ctx is not None else None) or "error"
    click.echo(f"{prog}: {untrusted.visible(message)}", err=True)
    sys.exit(exit_code)


# the JSON layouts our commands print (each command keeps the one it has always printed)
PRETTY: dict[str, Any] = {"indent": 2}  # ASCII-escaped, as the suite prints exo's
PRETTY_UNICODE: dict[str, Any] = {"indent": 2, "ensure_ascii": False}
SORTED: dict[str, Any] = {"sort_keys": True}
CANONICAL: dict[str, Any] = {"sort_keys": True, "separators": (",", ":")}  # the governed documents'


def emit(as_json: bool, document: object, lines: str | Iterable[str] = (),
         layout: dict[str, Any] = SORTED, *, authored: bool = False) -> None:
    """A command's answer: `document` as JSON under `--json`, else `lines` for people;
    `authored` lines quote what others wrote (ids, holders, notes), so every hidden
    character in them is shown as U+XXXX (:mod:`tropo.untrusted`)."""
    if as_json:
        print_json(document, layout)
        return
    rows = [lines] if isinstance(lines, str) else list(lines)
    click.echo("\n".join(map(untrusted.visible, rows) if authored else rows))


def print_json(document: object, layout: dict[str, Any] = SORTED) -> None:
    """`document` as one JSON text on stdout, for a command that already knows it was asked
    for JSON."""
    click.echo(json.dumps(document, **layout))


def _wants_json(args: list[str]) -> bool:
    """`--json` among the words before a `--` (the only thing known when parsing itself fails)."""
    return "--json" in (args[: args.index("--")] if "--" in args else args)


class UsageLine(click.ClickException):
    """A click usage error re-shown as one line on stderr, `error: MESSAGE (see CMD --help)`,
    and, for a caller that asked for `--json`, also as the error document on stdout; the
    same exit code (2 for usage). Click's own display adds its usage text: three lines for
    one mistake."""

    def __init__(self, error: click.ClickException, as_json: bool, where: str, as_text: bool) -> None:
        super().__init__(error.format_message())
        self.code = error.exit_code
        self.__dict__["exit_code"] = self.code  # what click exits with; its stubs type it class-wide
        ctx = getattr(error, "ctx", None)
        self.command_path = ctx.command_path if ctx is not None else where
        self.as_json = as_json
        self.as_text = as_text

    def show(self, file: object = None) -> None:
        if self.as_json:
            doc = _document(self.message, self.code, "usage", self.as_text, {})
            click.echo(json.dumps(doc, sort_keys=True))
        hint = f" (see {self.command_path} --help)" if self.command_path else ""
        click.echo(f"error: {self.message}{hint}", err=True)


class JsonErrorsGroup(click.Group):
    """The top group of each of our commands: usage errors anywhere below it (a missing
    option, a bad value, an unknown command) are one line, and follow `--json` like every
    other error. Commands named in `lazy` are loaded only when named (see `get_command`)."""

    error_as_text: ClassVar[bool] = False  # the published error document has a string `error`

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The names of the loaded commands and of those still in `lazy`, as click sorts them."""
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A command of `lazy` (name -> "module:attribute") is imported the first time it is
        named, so a run pays only for the command it runs; `--help` and completion, which
        name them all, see the same tree as if every one had been added up front."""
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, _, attribute = self.lazy[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def _one_line(self, error: click.ClickException, as_json: bool, where: str) -> click.ClickException:
        """What to raise for `error`: a usage error is always one line; any other click
        error already is, and changes only for `--json`. `where` names the command when
        click's parser failed before the error had a context."""
        if isinstance(error, UsageLine) or not (as_json or isinstance(error, click.UsageError)):
            return error
        return UsageLine(error, as_json, where, self.error_as_text)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        wants = _wants_json(list(args))
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except click.ClickException as error:
            raise self._one_line(error, wants, info_name or self.name or "") from None
        ctx.meta[_META_KEY] = wants
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            raise self._one_line(error, bool(ctx.meta.get(_META_KEY)), ctx.command_path) from None

