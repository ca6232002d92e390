"""`strato flow plan | next | done | usage` and `strato run`: start a run and carry it
step by step, or let the engine's agents drive it (in the foreground or a background runner)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from strato.agents.locks import exclusive
from strato.runs.background import runner as background
from strato.runs.cli.terminal import (
    consented_spec,
    event_line,
    exit_for,
    finish,
    handled,
    json_arg,
    json_option,
    parse_inputs,
    print_summary,
    root_option,
    runs_at,
    say,
)
from strato.runs.views.documents import (
    outcome_view,
    rejection,
    summary,
    usage_view,
)
from tropo.console import REFUSED, USAGE, fail


@click.command("plan")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE", help="Input field (JSON or text).")
@click.option("--input-json", help="All inputs as one JSON object (or @file).")
@click.option("--id", "run_id", help="Name the run (letters, digits, dashes); default a random uuid.")
@root_option
@json_option
@handled
def plan_cmd(
    spec: Path, inputs: tuple[str, ...], input_json: str | None, run_id: str | None, root: Path, as_json: bool
) -> None:
    """Start a run of SPEC's entry flow and show its first ready steps.

    Example: strato flow plan review.yaml --input text=hello --json
    """
    runs = runs_at(root)
    outcome = runs.plan(consented_spec(runs, spec), parse_inputs(inputs, input_json), run_id)
    finish(runs, outcome, as_json)


@click.command("next")
@click.argument("run_id", metavar="RUN")
@root_option
@json_option
@handled
def next_cmd(run_id: str, root: Path, as_json: bool) -> None:
    """Show RUN's ready steps (with dispatch tokens) and waiting gates. Engine-dispatched
    fanouts that are due are run first, unless another process drives RUN (its
    background runner, a foreground `strato run`): that one runs them.

    Example: strato flow next 3f2c... --json
    """
    runs = runs_at(root)
    run_id = runs.store.resolve(run_id)
    background.carry_on(runs, run_id)
    view = summary(runs, runs.load(run_id))
    print_summary(view, as_json)
    exit_for(view)


@click.command("done")
@click.argument("run_id", metavar="RUN")
@click.argument("step")
@click.option("--token", required=True, help="The dispatch token from `next`.")
@click.option(
    "--result", "result_text", required=True, help="JSON {output, failure?, usage?, telemetry?} or @file."
)
@click.option("--generation", type=click.IntRange(min=1), help="Refused unless it is the current hand-out's.")
@click.option("--contract-digest", help="Refused unless it is the current hand-out's contractDigest.")
@click.option("--revision-digest", help="Refused unless it is the current hand-out's revisionDigest.")
@root_option
@json_option
@handled
def done_cmd(
    run_id: str,
    step: str,
    token: str,
    result_text: str,
    generation: int | None,
    contract_digest: str | None,
    revision_digest: str | None,
    root: Path,
    as_json: bool,
) -> None:
    """Report STEP's result; the engine checks the contract and ensures. With
    --generation or a digest from `next`, a result for an earlier hand-out of the step
    is refused even if its token were current.

    Example: strato flow done <run> work --token <t> --result '{"output": {"summary": "ok"}}'
    """
    runs = runs_at(root)
    result = json_arg(result_text, "--result")
    given = {"generation": generation, "contractDigest": contract_digest, "revisionDigest": revision_digest}
    claims = {k: v for k, v in given.items() if v is not None}
    outcome = runs.done(run_id, step, token, result, claims)
    view = outcome_view(runs, outcome)
    rejected = rejection(outcome, step)
    if rejected is None:
        print_summary(view, as_json)
        exit_for(view)
        return
    print_summary({**view, "rejected": rejected}, as_json)
    then = "a new attempt is ready" if rejected["retry"] else "no retry left"
    say(f"error: result for {step} rejected: {rejected['reason']} ({then})", err=True)
    sys.exit(1)


@click.command("usage")
@click.argument("run_id", metavar="RUN")
@click.argument("dispatch_id", metavar="DISPATCH_ID")
@click.option("--usage", "usage_text", required=True, help="JSON {usd?, tokens?, ms?} or @file.")
@click.option("--telemetry", "telemetry_text", help="JSON {durationMs, model, effort?} or @file.")
@root_option
@json_option
@handled
def usage_cmd(
    run_id: str, dispatch_id: str, usage_text: str, telemetry_text: str | None, root: Path, as_json: bool
) -> None:
    """Report what dispatch DISPATCH_ID of RUN cost (the dispatchId from `next`). It is
    debited from the run's budgets once: a repeat prints `duplicate` and changes
    nothing (exit 0). A malformed report or an unknown dispatch is refused (exit 1).

    \b
    Example:
      strato flow usage <run> <dispatch-id> --usage '{"usd": 0.02, "tokens": 1200}' \\
        --telemetry '{"durationMs": 5400, "model": "gpt-5-codex", "effort": "high"}'
    """
    runs = runs_at(root)
    usage = json_arg(usage_text, "--usage")
    telemetry = None if telemetry_text is None else json_arg(telemetry_text, "--telemetry")
    view = usage_view(runs, runs.usage_report(run_id, dispatch_id, usage, telemetry), dispatch_id)
    if as_json:
        click.echo(json.dumps(view, sort_keys=True))
        return
    spent = ", ".join(f"{k} {v:g}" for k, v in sorted(view["ledger"]["spent"].items())) or "nothing"
    say(f"{view['status']} {dispatch_id} as seq {view['seq']}; run {view['runStatus']}, spent {spent}")


@click.command("run")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE", help="Input field (JSON or text).")
@click.option("--input-json", help="All inputs as one JSON object (or @file).")
@click.option("--id", "run_id", help="Name the run (letters, digits, dashes); default a random uuid.")
@click.option("--resume", metavar="RUN", help="Drive an existing run (e.g. after a gate decision).")
@click.option(
    "--background", "background_", is_flag=True, help="Detach: a runner drives the run; print its id at once."
)
@root_option
@json_option
@handled
def run_cmd(
    spec: Path | None,
    inputs: tuple[str, ...],
    input_json: str | None,
    run_id: str | None,
    resume: str | None,
    background_: bool,
    root: Path,
    as_json: bool,
) -> None:
    """Run SPEC in engine mode: agents from .vivary/agents.toml do the steps; stops when
    the run ends or waits at a gate (exit 0), exit 1 if it failed. With --background a
    detached runner drives it (follow it with `strato flow poll`).

    \b
    Example:
      strato run review.yaml --input text=hello --id review-1
      strato flow gate revise review-1 review --note "more detail"
      strato run --resume review-1
      strato run review.yaml --input text=hello --background --json
    """
    if (spec is None) == (resume is None):
        fail("give either SPEC or --resume RUN", USAGE, prog="error")
    runs = runs_at(root)
    if resume is None:
        assert spec is not None
        run_id = runs.plan(consented_spec(runs, spec), parse_inputs(inputs, input_json), run_id).snap.run_id
    else:
        run_id = runs.load(resume).run_id  # a unique prefix names the run
    if background_:
        background.mark(runs, run_id)
        if resume is not None:
            runs.resume(run_id, "cli")
        background.wake(runs, run_id)
        say(json.dumps({"status": "running", "runId": run_id}) if as_json else run_id)
        return
    if not as_json:
        say(f"run {run_id}", err=True)
    with exclusive(background.runner_lock(runs, run_id)) as held:
        if held is None:
            fail(f"run {run_id} is driven by its background runner (see `strato flow poll {run_id}`)",
                 REFUSED, prog="error")
        if resume is not None:
            runs.resume(run_id, "cli")
        snap = runs.drive(run_id, None if as_json else lambda ev: say(event_line(ev), err=True))
    view = summary(runs, snap)
    print_summary(view, as_json)
    exit_for(view)
