"""A command line imports only the command it runs: each console script's top group names
its command groups in a `lazy` table (tropo.console.JsonErrorsGroup), so `strato flow
done` does not pay for the guard, the MCP server, the evals or the workbench.

Each case runs in a fresh interpreter, since what it proves is what one run loads."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from tests.support.console import ENTRY_POINTS, command
from tropo.console import JsonErrorsGroup

PROBE = """
import importlib, json, sys
module, _, attribute = sys.argv[1].partition(":")
command = getattr(importlib.import_module(module), attribute)
try:
    command.main(args=sys.argv[2:], prog_name="probe", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""

# (command line, the module of the command it runs, packages it must not load)
CASES = [
    ("strato flow --help", "strato.runs.cli.group",
     ["strato.guard", "strato.mcp", "strato.evals", "strato.distill", "strato.heartbeat",
      "strato.agentruns", "strato.decide", "workbench"]),
    ("strato flow done --help", "strato.runs.cli.group",
     ["strato.guard", "strato.mcp", "strato.evals", "workbench"]),
    ("strato decide --help", "strato.decide.cli",
     ["strato.runs", "strato.guard", "strato.mcp", "strato.evals"]),
    ("tropo check --help", "tropo.cli.main",
     ["tropo.cli.retrieval", "tropo.cli.review", "tropo.cli.packs", "tropo.cli.verify"]),
    ("exo board --help", "exo.cli", ["exo.control"]),
    ("create-vivary doctor --help", "create_vivary.doctor",
     ["create_vivary.adopt_cli", "create_vivary.adopt"]),
]


def loaded(line: str) -> set[str]:
    """The modules a fresh interpreter holds after running `line` in process."""
    script, *args = line.split()
    proc = subprocess.run([sys.executable, "-c", PROBE, ENTRY_POINTS[script], *args],
                          capture_output=True, text=True, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


@pytest.mark.parametrize(("line", "own", "unwanted"), CASES, ids=[line for line, *_ in CASES])
def test_a_command_line_imports_only_the_command_it_runs(line: str, own: str, unwanted: list[str]) -> None:
    modules = loaded(line)
    assert own in modules
    assert sorted(m for m in modules for u in unwanted if m == u or m.startswith(u + ".")) == []


def test_the_full_help_still_loads_every_group() -> None:
    """`strato --help` lists every group with its summary, so it imports them all: the
    lazy table changes when a group loads, not which groups there are."""
    modules = loaded("strato --help")
    assert {"strato.guard.cli", "strato.mcp.cli", "strato.evals.cli", "strato.runs.cli.group"} <= modules


@pytest.mark.parametrize("script", sorted(ENTRY_POINTS))
def test_every_lazy_entry_loads_the_command_of_its_name(script: str) -> None:
    """A table entry is a command the group lists: it loads, and under the word the
    command itself answers to (so `--help` and the tree are what they were)."""
    group = command(script)
    assert isinstance(group, JsonErrorsGroup)
    ctx = click.Context(group, info_name=script)
    for name, entry in group.lazy.items():
        found = group.get_command(ctx, name)
        assert found is not None and found.name == name, (script, entry)
        assert name in group.list_commands(ctx)
