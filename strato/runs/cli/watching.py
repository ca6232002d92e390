"""`strato flow poll | resume | watch`: following a run another process drives, and
handing a run back to its background runner."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from strato.runs.background import runner as background
from strato.runs.cli.terminal import (
    event_line,
    handled,
    json_option,
    root_option,
    runs_at,
    say,
)
from strato.runs.engine.state import RUN_TERMINAL


@click.command("poll")
@click.argument("run_id", metavar="RUN")
@click.option("--cursor", type=int, default=0, show_default=True, help="Events already read (nextCursor).")
@root_option
@json_option
@handled
def poll_cmd(run_id: str, cursor: int, root: Path, as_json: bool) -> None:
    """RUN's events from CURSOR, its ledger and what its background runner is doing
    (Stratum's stratum_flow_bg_poll). A background run with work and no runner gets a
    new one. Exit 1 if the run failed or was cancelled.

    \b
    Examples:
      strato flow poll <run> --json
      strato flow poll <run> --cursor 12
    """
    doc = background.poll(runs_at(root), run_id, cursor)
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
    else:
        for ev in doc["events"]:
            say(event_line(ev))
        bg = doc["bg"]
        gates = f", waiting: {', '.join(bg['pendingGates'])}" if bg["pendingGates"] else ""
        say(f"{doc['runId']}: {bg['status']}{gates} (next cursor {doc['nextCursor']})")
    if doc["status"] == "failed":
        sys.exit(1)


@click.command("resume")
@click.argument("run_id", metavar="RUN")
@root_option
@json_option
@handled
def resume_cmd(run_id: str, root: Path, as_json: bool) -> None:
    """Carry RUN on in the background: mark it a background run and start its runner
    unless one is running (after a gate decision, a killed runner, a reboot). Prints
    what `strato flow poll` would.

    Example: strato flow resume <run> --json
    """
    runs = runs_at(root)
    run_id = runs.store.resolve(run_id)
    background.mark(runs, run_id)
    runs.resume(run_id, "cli")
    background.wake(runs, run_id)
    doc = background.poll(runs, run_id, 0)
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
    else:
        say(f"{doc['runId']}: {doc['bg']['status']}")


@click.command("watch")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01),
    default=0.2,
    show_default=True,
    help="Seconds between reads of the run's ref.",
)
@root_option
@json_option
@handled
def watch_cmd(run_id: str, interval: float, root: Path, as_json: bool) -> None:
    """Follow RUN's events until it ends (exit 0 if it completed, else 1).

    Example: strato flow watch <run> --json   # one event per line
    """
    store = runs_at(root).store
    run_id = store.resolve(run_id)
    seen: str | None = None
    while True:
        head = store.head(run_id)
        if head == seen:  # nothing new: one ref read per poll
            time.sleep(interval)
            continue
        for _commit, transition in store.since(head, seen):
            for ev in transition.get("events", []):
                say(json.dumps(ev, sort_keys=True) if as_json else event_line(ev))
        seen = head
        status = store.at(run_id, head).state["status"]
        if status in RUN_TERMINAL:
            sys.exit(0 if status == "completed" else 1)
