"""The ``strato`` command: each subsystem adds its own click group here."""

from __future__ import annotations

import click

from strato.agentruns.cli import agent, models_command
from strato.decide.cli import decide_command, decide_request_command, receipt_command
from strato.distill.cli import distill
from strato.evals.cli import eval_group
from strato.guard.cli import guard
from strato.heartbeat.cli import heartbeat
from strato.help import help_command
from strato.mcp.cli import mcp_command
from strato.runs.cli.driving import run_cmd
from strato.runs.cli.group import flow, query
from strato.runs.cli.lanes import lanes_command
from tropo.console import JsonErrorsGroup


@click.group("strato", cls=JsonErrorsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
def main() -> None:
    """The agent OS: governed decisions, flows, guard, MCP server."""


main.add_command(decide_command)
main.add_command(decide_request_command)
main.add_command(receipt_command)
main.add_command(guard)
main.add_command(flow)
main.add_command(run_cmd)
main.add_command(mcp_command)
main.add_command(heartbeat)
main.add_command(distill)
main.add_command(agent)
main.add_command(lanes_command)
main.add_command(eval_group)
main.add_command(query)
main.add_command(help_command)
main.add_command(models_command)


if __name__ == "__main__":
    main(prog_name="strato")
