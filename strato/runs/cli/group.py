"""`strato flow`: one group for everything about flows, the spec commands (validate,
migrate, compile-speckit; `strato.flow.cli`) and the run commands beside them. It lives
here, above both: the run commands need the flow package, never the other way round."""

from __future__ import annotations

import click

from strato.flow.cli import compile_speckit_cmd, migrate_cmd, validate_cmd
from strato.runs.cli.driving import done_cmd, next_cmd, plan_cmd, usage_cmd
from strato.runs.cli.gates import gate_cmd, gates_cmd
from strato.runs.cli.history import audit_cmd, cancel_cmd, commit_cmd, list_cmd, revert_cmd, show_cmd
from strato.runs.cli.watching import poll_cmd, resume_cmd, watch_cmd

flow = click.Group(
    "flow",
    commands=[validate_cmd, migrate_cmd, compile_speckit_cmd,
              plan_cmd, next_cmd, done_cmd, usage_cmd, gate_cmd, gates_cmd,
              commit_cmd, revert_cmd, cancel_cmd, audit_cmd, list_cmd, show_cmd,
              poll_cmd, resume_cmd, watch_cmd],
    help="""Flow specs (Stratum v1: validate, migrate --check, compile-speckit) and the
    runs of them, stored in the repository under refs/vivary/runs/.

    \b
    Example:
      strato flow validate review.yaml
      strato flow plan review.yaml --input text=hello
      strato flow next <run>
      strato flow done <run> work --token <t> --result '{"output": {"summary": "ok"}}'
    """,
)

query = click.Group(
    "query",
    help="""The Stratum seed's words for reading runs: `query flows`, `query flow RUN` and
    `query gates` are `flow list`, `flow show RUN` and `flow gates` (the same commands).

    \b
    Example:
      strato query flows --json
      strato query flow <run>
      strato query gates
    """,
)
query.add_command(list_cmd, "flows")
query.add_command(show_cmd, "flow")
query.add_command(gates_cmd, "gates")
