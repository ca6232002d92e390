"""`strato help [COMMAND...]`: the Stratum seed's `help`, the same text as `--help` of the
command it names, for an agent that follows the seed's words rather than click's."""

from __future__ import annotations

import json

import click

from tropo.console import USAGE, fail


@click.command("help")
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@click.option("--json", "as_json", is_flag=True,
              help="Print {command, usage, commands}: the help text and the subcommands.")
@click.pass_context
def help_command(ctx: click.Context, words: tuple[str, ...], as_json: bool) -> None:
    """Show the usage of strato, or of COMMAND (exit 2 for a command strato does not have).

    \b
    Examples:
      strato help
      strato help flow cancel
      strato help query --json
    """
    root = ctx.find_root()
    command, path = root.command, [root.info_name or "strato"]
    here = click.Context(command, info_name=path[0])
    for word in words:
        found = command.get_command(here, word) if isinstance(command, click.Group) else None
        if found is None:
            fail(f"no command {' '.join([*path, word])!r} (see {' '.join(path)} --help)", USAGE)
        command, path = found, [*path, word]
        here = click.Context(command, info_name=word, parent=here)
    text = command.get_help(here)
    if not as_json:
        click.echo(text)
        return
    subs = sorted(command.list_commands(here)) if isinstance(command, click.Group) else []
    click.echo(json.dumps({"command": " ".join(path), "usage": text, "commands": subs}, sort_keys=True))
