"""The ``strato`` command: each subsystem adds its own click group here."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
def main() -> None:
    """The agent OS: governed decisions, flows, guard."""


def _register_subsystems() -> None:
    from strato.guard.cli import guard

    main.add_command(guard)


_register_subsystems()
