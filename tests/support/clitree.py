"""Every leaf command of every console script, found by walking click's command tree (so a
new command is covered the day it is added), and the bad argument each one is given to
prove its error path: tests/test_cli_tree.py reads their help, tests/test_json_errors.py
their error documents."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import entry_points

import click

PACKAGES = ("strato", "tropo", "exo", "create_vivary", "hooks", "vivary")
MISSING = "no-such-folder"
# where the generic bad argument (a file that is not what was asked for) is a valid input
# whose answer is a finding, the bad argument is a missing file instead
BAD_ARGS = {"strato flow validate": ["missing.yaml"]}


def _leaves(command: click.Command, path: list[str]) -> Iterator[tuple[str, click.Command]]:
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1])
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _leaves(sub, [*path, name])
    else:
        yield " ".join(path), command


def forwards(command: click.Command) -> bool:
    """A front-door alias (`vivary check` is `tropo check`): it takes every word as is."""
    return [type(p.type) for p in command.params] == [click.types.UnprocessedParamType]


LEAVES = dict(
    leaf
    for ep in sorted(entry_points(group="console_scripts"), key=lambda e: e.name)
    if ep.value.partition(".")[0].partition(":")[0] in PACKAGES
    for leaf in _leaves(ep.load(), [ep.name])
)


def options(command: click.Command) -> set[str]:
    return {o for p in command.params if isinstance(p, click.Option) and not p.hidden for o in p.opts}


def bad_argv(name: str, command: click.Command) -> list[str]:
    """The leaf with a bad value for each required parameter and a --root that does not
    exist; a leaf that needs neither gets a word it does not take."""
    argv = name.split()
    if name in BAD_ARGS:
        return [*argv, *BAD_ARGS[name], "--json"]
    bad = False
    for p in command.params:
        if p.required:
            value = p.type.choices[0] if isinstance(p.type, click.Choice) else "bad.txt"
            argv += [*([p.opts[0]] if isinstance(p, click.Option) else []), str(value)]
            bad = True
    if "--root" in options(command):
        argv += ["--root", MISSING]
    elif not bad:
        argv.append("bad.txt")
    return [*argv, "--json"]
