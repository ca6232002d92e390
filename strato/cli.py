"""The ``strato`` command: each subsystem adds its own click group here."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
def main() -> None:
    """The agent OS: governed decisions, flows, guard."""


def _register() -> None:
    from strato.flow.cli import flow
    from strato.runs.cli import run_cmd, runs_group

    for command in runs_group.commands.values():
        flow.add_command(command)
    main.add_command(flow)
    main.add_command(run_cmd)


_register()
