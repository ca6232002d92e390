"""The ``vivary`` front door: the suite's task verbs, each routed to the command that owns it.

A verb is an argument-vector prefix for another command, never a second implementation:
``vivary check ARGS`` is ``tropo check ARGS``, ``vivary control ARGS`` is ``exo control ARGS``
(which still demands ``--governed``, as the suite's does). Every owner sits below vivary,
so every verb runs in this process: its click command is loaded when the verb is used.
Verbs whose owner does not exist here yet answer with a one-line refusal (exit 2) naming
the issue that builds them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import click

from tropo.console import JsonErrorsGroup


@dataclass(frozen=True)
class Route:
    """One task verb: where it is listed, and which command (and operation) runs it."""

    verb: str
    group: str
    summary: str
    owner: str  # the standalone command that owns the verb
    operation: tuple[str, ...]  # arguments put before the user's
    entry: str  # "module:attribute" of the owner's click command, run in process
    missing: str | None = None  # why it is not available yet (then nothing runs)


ISSUE = "issue 18"

ROUTES = (
    Route("create", "Workspace", "Create a Vivary workspace scaffold",
          "create-vivary", ("init",), "create_vivary.cli:main"),
    Route("adopt", "Workspace", "Plan governed context for an existing workspace",
          "create-vivary", ("adopt",), "create_vivary.cli:main"),
    Route("doctor", "Workspace", "Validate a Vivary workspace scaffold",
          "create-vivary", ("doctor",), "create_vivary.cli:main"),
    Route("capabilities", "Workspace", "List the optional preset capabilities",
          "create-vivary", ("capabilities",), "create_vivary.cli:main"),
    Route("check", "Graph and retrieval",
          "Validate the context graph and report errors and warnings",
          "tropo", ("check",), "tropo.cli.main:main"),
    Route("find", "Graph and retrieval", "Retrieve a token-budgeted context set for a query",
          "tropo", ("find",), "tropo.cli.main:main"),
    Route("decide", "Policy", "Evaluate one governed decision request",
          "strato", ("decide",), "strato.cli:main"),
    Route("review", "Review", "Run a review rule pack over the context graph",
          "tropo", ("review",), "tropo.cli.main:main"),
    Route("impact", "Review", "Show what one node affects",
          "tropo", ("impact",), "tropo.cli.main:main"),
    Route("verify", "Review", "Verify one governed capsule, receipt and gate",
          "tropo", ("verify",), "tropo.cli.main:main"),
    Route("control", "Coordination", "Dispatch one governed Core control request",
          "exo", ("control",), "exo.cli:main"),
)

BY_VERB = {route.verb: route for route in ROUTES}


def dispatch(route: Route, args: list[str]) -> int:
    """Run the verb's owner on ``operation + args`` and return its exit status."""
    if route.missing is not None:
        click.echo(f"vivary {route.verb}: not available yet: {route.missing} ({ISSUE})", err=True)
        return 2
    argv = [*route.operation, *args]
    module, _, attribute = route.entry.partition(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    # `vivary check` is `tropo check` by the same word; `vivary create` is `create-vivary
    # init`, whose messages and help hints name the command as its owner spells it
    prog = "vivary" if route.operation == (route.verb,) else route.owner
    try:
        command.main(args=argv, prog_name=prog, standalone_mode=True)  # always exits
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        click.echo(exc.code, err=True)  # what the interpreter prints for sys.exit("...")
        return 1


def _help(route: Route) -> str:
    if route.missing is not None:
        return f"{route.summary}: not available yet ({ISSUE})."
    return f"{route.summary}: runs `{' '.join((route.owner, *route.operation))} ARGS`."


def _verb_command(route: Route) -> click.Command:
    @click.pass_context
    def run(ctx: click.Context, args: tuple[str, ...]) -> None:
        ctx.exit(dispatch(route, list(args)))

    return click.Command(
        route.verb,
        callback=run,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        help=_help(route),
        short_help=route.summary,
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    )


class FrontDoor(JsonErrorsGroup):
    """The ``vivary`` group: task verbs listed by area, then the group's own commands."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        width = max(len(route.verb) for route in ROUTES)
        for group in dict.fromkeys(route.group for route in ROUTES):
            with formatter.section(group):
                formatter.write_dl([(r.verb.ljust(width), r.summary)
                                    for r in ROUTES if r.group == group])
        own = [(name, cmd.get_short_help_str()) for name, cmd in sorted(self.commands.items())
               if name not in BY_VERB]
        if own:
            with formatter.section("Commands"):
                formatter.write_dl(own)


def register(group: click.Group) -> None:
    """Add every task verb to ``group`` (the ``vivary`` command)."""
    for route in ROUTES:
        group.add_command(_verb_command(route))
