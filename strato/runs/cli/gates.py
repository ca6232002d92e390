"""`strato flow gate | gates`: the decisions a run waits for, and giving one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from strato.runs.background import runner as background
from strato.runs.cli.terminal import (
    finish,
    handled,
    json_option,
    root_option,
    runs_at,
    say,
)
from strato.runs.engine.state import RESOLVERS
from strato.runs.workers.shared import shared_run


@click.command("gate")
@click.argument("decision", type=click.Choice(["approve", "revise", "reject"]))
@click.argument("run_id", metavar="RUN")
@click.argument("step")
@click.option("--note", help="Why (kept in the run's history).")
@click.option("--token", help="Gate token from `gates` (refused if the gate moved on).")
@click.option(
    "--resolved-by",
    type=click.Choice(RESOLVERS),
    default=None,
    help="Who decided (kept in the gate's history); default human at a terminal, else agent.",
)
@click.option("--remote", help="Decide the run as this shared remote holds it (fetch, decide, push).")
@root_option
@json_option
@handled
def gate_cmd(
    decision: str,
    run_id: str,
    step: str,
    note: str | None,
    token: str | None,
    resolved_by: str | None,
    remote: str | None,
    root: Path,
    as_json: bool,
) -> None:
    """Decide a waiting gate: approve, revise (re-run from its revise target) or reject.
    A gate that `[gates] person` in .vivary/agents.toml reserves for a person is decided
    only from a terminal, as `--resolved-by human`.

    Example: strato flow gate approve <run> review --note "looks right" --resolved-by agent

    A run shared through a remote (`strato worker`) is decided from any clone with
    `--remote origin`.
    """
    runs = runs_at(root)
    engine_decision = "kill" if decision == "reject" else decision
    # a script is not a person: without a terminal the default is the agent
    via = "terminal" if sys.stdin.isatty() else "cli"
    by = resolved_by or ("human" if via == "terminal" else "agent")
    if remote is not None:  # two clones deciding at once: one push lands, the other is `stale`
        shared = shared_run(runs, remote, run_id)
        outcome = runs.gate(run_id, step, engine_decision, token, note, by, via, apply=shared.apply)
        finish(runs, outcome, as_json)
        return
    outcome = runs.gate(run_id, step, engine_decision, token, note, by, via)
    background.wake(runs, outcome.snap.run_id)  # a background run carries on without us
    finish(runs, outcome, as_json)


@click.command("gates")
@root_option
@json_option
@handled
def gates_cmd(root: Path, as_json: bool) -> None:
    """List gates waiting for a decision in every running run.

    Example: strato flow gates --json
    """
    gates = runs_at(root).gates()
    if as_json:
        click.echo(json.dumps({"gates": gates}, sort_keys=True))
        return
    for g in gates:
        say(f"{g['runId']}  {g['stepId']}  round {g['round']}  token {g['gateToken']}")
    if not gates:
        click.echo("no gates waiting")
