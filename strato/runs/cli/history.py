"""`strato flow commit | revert | cancel | audit | list | show`: a run's checkpoints, its
end, and what its ref's history says about it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from strato.runs.background import runner as background
from strato.runs.cli.terminal import (
    event_line,
    finish,
    handled,
    json_option,
    print_summary,
    root_option,
    runs_at,
    say,
)
from strato.runs.dispatch import agentgroups
from strato.runs.store import AmbiguousRunId, RunNotFound
from strato.runs.views.documents import (
    commit_view,
    list_view,
    outcome_view,
    show_view,
)
from strato.runs.workers.shared import shared_run
from tropo import untrusted
from tropo.console import REFUSED, USAGE, fail


@click.command("commit")
@click.argument("run_id", metavar="RUN")
@click.argument("label")
@root_option
@json_option
@handled
def commit_cmd(run_id: str, label: str, root: Path, as_json: bool) -> None:
    """Checkpoint RUN's current state as LABEL (a ref; same label moves it).

    Example: strato flow commit <run> before-review
    """
    view = commit_view(runs_at(root), run_id, label)
    say(
        json.dumps(view, sort_keys=True) if as_json else f"checkpoint {view['label']} -> {view['head'][:12]}"
    )


@click.command("revert")
@click.argument("run_id", metavar="RUN")
@click.argument("label")
@root_option
@json_option
@handled
def revert_cmd(run_id: str, label: str, root: Path, as_json: bool) -> None:
    """Return RUN to checkpoint LABEL (state only; spend never rolls back; tokens rotate).

    Example: strato flow revert <run> before-review
    """
    runs = runs_at(root)
    finish(runs, runs.revert(run_id, label), as_json)


@click.command("cancel")
@click.argument("run_id", metavar="RUN")
@click.option("--reason", help="Recorded in the run's history.")
@click.option("--remote", help="Cancel the run as this shared remote holds it (its workers stop).")
@root_option
@json_option
@handled
def cancel_cmd(run_id: str, reason: str | None, remote: str | None, root: Path, as_json: bool) -> None:
    """Cancel RUN: outstanding tokens become stale. A background run's runner stops the
    agents it started (their whole process groups: SIGTERM, SIGKILL after a grace) and
    records `flow_cancelled`; this waits until it has (exit 1 if it has not yet). The
    agents a foreground `strato run` elsewhere is running for it are stopped here. Exit 2
    for a run that does not exist; a run already cancelled is left as it is, exit 0 with
    `reason: already_cancelled` (so a retried cancel is safe).

    Example: strato flow cancel <run> --reason "superseded"

    With `--remote origin` the cancel is pushed to a run shared through that remote
    (`strato worker`); every worker stops its agents at its next fetch.
    """
    runs = runs_at(root)
    shared = None if remote is None else shared_run(runs, remote, run_id)
    try:
        snap = runs.load(run_id)
    except RunNotFound as exc:  # Stratum's exit code for an unknown flow; ambiguity stays `handled`'s
        if isinstance(exc, AmbiguousRunId):
            raise
        fail(str(exc), USAGE, code="run_not_found", prog="error")
    if snap.state["status"] == "cancelled":
        agentgroups.stop_all(runs.repo, snap.run_id)  # what a foreground engine still runs
        print_summary({**show_view(runs, snap.run_id), "reason": "already_cancelled"}, as_json)
        if not as_json:
            say("  (already cancelled: nothing changed)")
        return
    if shared is not None:
        outcome = shared.apply(snap.run_id, "cancel", lambda e: e.cancel("cli", reason))
        print_summary(outcome_view(runs, outcome), as_json)
        return
    view = background.cancel_view(runs, snap.run_id, "cli", reason)
    if view["status"] == "cancelled":
        agentgroups.stop_all(runs.repo, snap.run_id)
    print_summary(view, as_json)
    if view["status"] != "cancelled":
        fail(f"cancel of {view['runId']} is recorded; its runner has not stopped the run yet",
             REFUSED, prog="error")


@click.command("audit")
@click.argument("run_id", metavar="RUN")
@root_option
@json_option
@handled
def audit_cmd(run_id: str, root: Path, as_json: bool) -> None:
    """Every event of RUN, read from the history of its ref.

    Example: strato flow audit <run> --json
    """
    report = runs_at(root).audit(run_id)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    for ev in report["events"]:
        say(event_line(ev))
    click.echo("attempts:")
    for row in report["attempts"]:
        number = "gate" if row.get("gate") else f"#{row['attempt']}"
        why = f"  {untrusted.line(row['reason'])}" if row["reason"] else ""
        resolution = row["resolution"] or "-"
        say(f"  {row['stepId']:<16} {number:<5} {row['outcome']:<10} {resolution:<11}{why}")
    say(f"status: {report['status']}")


@click.command("list")
@root_option
@json_option
@handled
def list_cmd(root: Path, as_json: bool) -> None:
    """Every run in the repository with its status.

    Example: strato flow list --json
    """
    view = list_view(runs_at(root))
    if as_json:
        click.echo(json.dumps(view, sort_keys=True))
        return
    for row in view["runs"]:
        say(f"{row['runId']}  {row['flow']:<20} {row['status']}")
    if not view["runs"]:
        click.echo("no runs (start one with `strato run SPEC` or `strato flow plan SPEC`)")


@click.command("show")
@click.argument("run_id", metavar="RUN")
@root_option
@json_option
@handled
def show_cmd(run_id: str, root: Path, as_json: bool) -> None:
    """RUN's status, ready steps, waiting gates, output or failure.

    Example: strato flow show <run>
    """
    print_summary(show_view(runs_at(root), run_id), as_json)
