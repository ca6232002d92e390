"""The ``strato`` command: each subsystem adds its own click group here."""

from __future__ import annotations

import click

from strato.flow.cli import flow


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
def main() -> None:
    """The agent OS: governed decisions, flows, guard."""


main.add_command(flow)
