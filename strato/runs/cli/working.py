"""`strato worker`: carry shared runs from this clone, through a git remote (docs/runs.md,
"Many machines")."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from types import FrameType

import click

from strato.runs.cli.terminal import handled, json_option, root_option, runs_at, say
from strato.runs.workers import leases
from strato.runs.workers.shared import shared_run
from strato.runs.workers.worker import Options, Worker
from tropo.console import USAGE, fail


@click.command("worker")
@click.option("--remote", required=True, help="The shared remote (a name `git remote` lists).")
@click.option("--run", "run_id", help="Carry this run only.")
@click.option("--all", "every", is_flag=True, help="Carry every run the remote holds.")
@click.option("--agents", help="Comma-separated agent names this worker runs (default: all it has).")
@click.option("--max-parallel", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Agents run at once by this worker.")
@click.option("--lease-ttl", type=click.FloatRange(leases.MIN_TTL_S, leases.MAX_TTL_S),
              default=leases.DEFAULT_TTL_S, show_default=True,
              help="Seconds a claim lives without a renewal (renewed every third of it).")
@click.option("--interval", type=click.FloatRange(0.01, 60), default=0.5, show_default=True,
              help="Seconds between fetches while there is room for work (busy: one a second).")
@click.option("--idle-exit", type=click.FloatRange(0, None), default=None,
              help="Stop after this many seconds with nothing to run (default: when the runs end).")
@root_option
@json_option
@handled
def worker_cmd(remote: str, run_id: str | None, every: bool, agents: str | None, max_parallel: int,
               lease_ttl: float, interval: float, idle_exit: float | None, root: Path, as_json: bool) -> None:
    """Carry runs shared through REMOTE: fetch them, claim ready steps on the remote (the
    push that creates the claim wins), run each with this machine's own agents and push
    the result as the run's next transition with a lease on the head it read. Leaves a
    step whose agent this worker lacks to others, and says so. Exits when the runs end.

    Example: strato worker --remote origin --run review-1 --max-parallel 2
    """
    if every == (run_id is not None):
        fail("give exactly one of --run ID and --all", USAGE, prog="error")
    runs = runs_at(root)
    shared = shared_run(runs, remote, run_id)  # the remote is known and answers
    names = None if agents is None else frozenset(a.strip() for a in agents.split(",") if a.strip())
    options = Options(run_id, names, max_parallel, lease_ttl, interval, idle_exit)
    worker = Worker(shared, options, lambda line: say(line, err=as_json))
    signal.signal(signal.SIGTERM, _exit_on_term)
    report = worker.run()
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    done = ", ".join(f"{r} {s}" for r, s in report["runs"].items()) or "no runs"
    say(f"worker {report['worker']}: {report['done']} step(s) done, {report['takeovers']} taken over, "
        f"{report['racesLost']} claim race(s) lost; {done}")


def _exit_on_term(_signum: int, _frame: FrameType | None) -> None:
    """A worker told to stop stops its agents and gives its claims up (the loop's
    `finally`), so others take them at once instead of waiting for them to expire."""
    sys.exit(143)
