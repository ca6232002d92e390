"""The ``strato`` command: each subsystem adds its own click group here, by name, loaded
only when a command line names it (a `strato flow done` does not import the guard, the MCP
server or the evals; tests/test_cli_imports.py)."""

from __future__ import annotations

import click

from tropo.console import JsonErrorsGroup

COMMANDS = {
    "decide": "strato.decide.cli:decide_command",
    "decide-request": "strato.decide.cli:decide_request_command",
    "receipt": "strato.decide.cli:receipt_command",
    "guard": "strato.guard.cli:guard",
    "flow": "strato.runs.cli.group:flow",
    "run": "strato.runs.cli.driving:run_cmd",
    "mcp": "strato.mcp.cli:mcp_command",
    "heartbeat": "strato.heartbeat.cli:heartbeat",
    "distill": "strato.distill.cli:distill",
    "agent": "strato.agentruns.cli:agent",
    "lanes": "strato.runs.cli.lanes:lanes_command",
    "eval": "strato.evals.cli:eval_group",
    "query": "strato.runs.cli.group:query",
    "help": "strato.help:help_command",
    "models": "strato.agentruns.cli:models_command",
    "worker": "strato.runs.cli.working:worker_cmd",
}


@click.group("strato", cls=JsonErrorsGroup, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
def main() -> None:
    """The agent OS: governed decisions, flows, guard, MCP server."""


if __name__ == "__main__":
    main(prog_name="strato")
