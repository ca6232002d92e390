"""`strato flow ...` and `strato run`: the run operations at a terminal.

Exit codes: 0 done (or waiting at a gate, as asked), 1 the run failed or the action was
refused, 2 usage, configuration or spec errors. `--json` prints one object with stable
keys; errors are one line on stderr."""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from strato.agents import spectrust
from strato.agents.locks import exclusive
from strato.runs.background import runner as background
from strato.runs.engine import bounds
from strato.runs.engine.state import RESOLVERS, RUN_TERMINAL
from strato.runs.service import Runs
from strato.runs.store import Outcome
from strato.runs.views.documents import (
    EXPECTED_ERRORS,
    commit_view,
    describe_error,
    failed,
    list_view,
    outcome_view,
    rejection,
    show_view,
    summary,
    usage_view,
)
from tropo import untrusted

F = TypeVar("F", bound=Callable[..., Any])



class Exit(Exception):
    def __init__(self, code: int, message: str, payload: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.payload = payload or {}


def _fail(code: int, message: str, **payload: Any) -> NoReturn:
    raise Exit(code, message, payload)


def handled(fn: F) -> F:
    """Map expected errors to exit codes and a one-line message (JSON with --json)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = kwargs.get("as_json", False)
        try:
            return fn(*args, **kwargs)
        except Exit as exc:
            code, message, payload = exc.code, str(exc), exc.payload
        except EXPECTED_ERRORS as exc:
            code, message, payload = describe_error(exc)
        if as_json:
            click.echo(json.dumps({"ok": False, "error": message, **payload}, sort_keys=True))
        _say(f"error: {message}", err=True)
        sys.exit(code)

    return wrapper  # type: ignore[return-value]


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")(fn)


def root_option(fn: F) -> F:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("."),
        show_default=True,
        help="Workspace (any folder inside the git repository).",
    )(fn)


def _runs(root: Path) -> Runs:
    return Runs(root)


def _parse_inputs(pairs: tuple[str, ...], input_json: str | None) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    if input_json is not None:
        value = _json_arg(input_json, "--input-json")
        if not isinstance(value, dict):
            _fail(2, "--input-json must be a JSON object")
        inputs.update(value)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            _fail(2, f"--input expects key=value, got {pair!r}")
        try:
            inputs[key] = bounds.loads(text, f"--input {key}")
        except json.JSONDecodeError:
            inputs[key] = text
    return inputs


def _json_arg(text: str, what: str) -> Any:
    if text.startswith("@"):
        try:
            path = Path(text[1:])
            if path.stat().st_size > bounds.MAX_REQUEST_BYTES:
                _fail(2, f"{what}: {path} is larger than 16 MiB")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(2, f"{what}: cannot read {text[1:]}: {exc}")
    try:
        return bounds.loads(text, what)
    except json.JSONDecodeError as exc:
        _fail(2, f"{what}: not JSON: {exc}")


def _say(text: str, err: bool = False) -> None:
    """Print one line of this CLI's output. A run's text (its steps' `do`, ids, inputs,
    reasons, notes, failures) is its author's, and a run ref can come from another clone
    or an MCP client: every hidden character is shown as U+XXXX (:mod:`tropo.untrusted`)."""
    click.echo(untrusted.visible(text), err=err)


def _print_summary(view: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(view, sort_keys=True))
        return
    _say(f"run {view['runId']} ({view['flow']}): {view['status']}")
    for entry in view["ready"]:
        _say(f"  ready  {entry['id']} (attempt {entry['attempt']}, token {entry['dispatchToken']})")
        if "dispatchId" in entry:
            _say(f"         dispatch {entry['dispatchId']}, generation {entry['generation']}")
        _say(f"         {untrusted.line(entry['do'], 200)}")
    for gate in view["gates"]:
        _say(f"  gate   {gate['stepId']} waiting (round {gate['round']}, token {gate['gateToken']})")
        for step, output in gate.get("subject", {}).items():
            _say(f"         asks about {step}: {json.dumps(output)[:2000]}")
    for row in view.get("attempts", []):
        why = f"  {untrusted.line(row['reason'])}" if row["reason"] else ""
        _say(f"  tried  {row['stepId']} #{row['attempt']} {row['outcome']} -> {row['resolution']}{why}")
    if "output" in view:
        _say(f"  output {json.dumps(view['output'])}")
    if "failure" in view:
        _say(f"  failure {untrusted.line(view['failure']['reason'])}")


def _exit_for(view: dict[str, Any]) -> None:
    if failed(view):
        sys.exit(1)


def _finish(runs: Runs, outcome: Outcome, as_json: bool) -> None:
    view = outcome_view(runs, outcome)
    _print_summary(view, as_json)
    _exit_for(view)


@click.group("flow")
def runs_group() -> None:
    """Flow runs stored in the repository under refs/vivary/runs/ (these commands are
    added to `strato flow`, next to the spec commands).

    \b
    Example:
      strato flow plan review.yaml --input text=hello
      strato flow next <run>
      strato flow done <run> work --token <t> --result '{"output": {"summary": "ok"}}'
    """


@runs_group.command("plan")
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
    runs = _runs(root)
    outcome = runs.plan(_consented_spec(runs, spec), _parse_inputs(inputs, input_json), run_id)
    _finish(runs, outcome, as_json)


def _read_spec(path: Path) -> str:
    try:
        if path.stat().st_size > bounds.MAX_REQUEST_BYTES:
            _fail(2, f"{path}: larger than 16 MiB")
        return path.read_text(encoding="utf-8")
    except OSError as exc:  # the reason alone: "[Errno 2] ... 'x.yaml'" repeats the path
        _fail(2, f"cannot read spec {path}: {(exc.strerror or str(exc)).lower()}")
    except UnicodeDecodeError:
        _fail(2, f"cannot read spec {path}: not UTF-8")


def _consented_spec(runs: Runs, path: Path) -> str:
    """The spec the person named at their own prompt, approved as read (as `bash FILE`
    runs what it is given): its commands may run in this repository from now on."""
    text = _read_spec(path)
    where, root = path.resolve(), runs.root.resolve()
    name = str(where.relative_to(root)) if where.is_relative_to(root) else str(where)
    spectrust.approve(runs.root, name, text)
    return text


@runs_group.command("next")
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
    runs = _runs(root)
    run_id = runs.store.resolve(run_id)
    background.carry_on(runs, run_id)
    view = summary(runs, runs.load(run_id))
    _print_summary(view, as_json)
    _exit_for(view)


@runs_group.command("done")
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
    runs = _runs(root)
    result = _json_arg(result_text, "--result")
    given = {"generation": generation, "contractDigest": contract_digest, "revisionDigest": revision_digest}
    claims = {k: v for k, v in given.items() if v is not None}
    outcome = runs.done(run_id, step, token, result, claims)
    view = outcome_view(runs, outcome)
    rejected = rejection(outcome, step)
    if rejected is None:
        _print_summary(view, as_json)
        _exit_for(view)
        return
    _print_summary({**view, "rejected": rejected}, as_json)
    then = "a new attempt is ready" if rejected["retry"] else "no retry left"
    _say(f"error: result for {step} rejected: {rejected['reason']} ({then})", err=True)
    sys.exit(1)


@runs_group.command("usage")
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
    runs = _runs(root)
    usage = _json_arg(usage_text, "--usage")
    telemetry = None if telemetry_text is None else _json_arg(telemetry_text, "--telemetry")
    view = usage_view(runs, runs.usage_report(run_id, dispatch_id, usage, telemetry), dispatch_id)
    if as_json:
        click.echo(json.dumps(view, sort_keys=True))
        return
    spent = ", ".join(f"{k} {v:g}" for k, v in sorted(view["ledger"]["spent"].items())) or "nothing"
    _say(f"{view['status']} {dispatch_id} as seq {view['seq']}; run {view['runStatus']}, spent {spent}")


@runs_group.command("gate")
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
    root: Path,
    as_json: bool,
) -> None:
    """Decide a waiting gate: approve, revise (re-run from its revise target) or reject.
    A gate that `[gates] person` in .vivary/agents.toml reserves for a person is decided
    only from a terminal, as `--resolved-by human`.

    Example: strato flow gate approve <run> review --note "looks right" --resolved-by agent
    """
    runs = _runs(root)
    engine_decision = "kill" if decision == "reject" else decision
    # a script is not a person: without a terminal the default is the agent
    via = "terminal" if sys.stdin.isatty() else "cli"
    by = resolved_by or ("human" if via == "terminal" else "agent")
    outcome = runs.gate(run_id, step, engine_decision, token, note, by, via)
    background.wake(runs, outcome.snap.run_id)  # a background run carries on without us
    _finish(runs, outcome, as_json)


@runs_group.command("gates")
@root_option
@json_option
@handled
def gates_cmd(root: Path, as_json: bool) -> None:
    """List gates waiting for a decision in every running run.

    Example: strato flow gates --json
    """
    gates = _runs(root).gates()
    if as_json:
        click.echo(json.dumps({"gates": gates}, sort_keys=True))
        return
    for g in gates:
        _say(f"{g['runId']}  {g['stepId']}  round {g['round']}  token {g['gateToken']}")
    if not gates:
        click.echo("no gates waiting")


@runs_group.command("commit")
@click.argument("run_id", metavar="RUN")
@click.argument("label")
@root_option
@json_option
@handled
def commit_cmd(run_id: str, label: str, root: Path, as_json: bool) -> None:
    """Checkpoint RUN's current state as LABEL (a ref; same label moves it).

    Example: strato flow commit <run> before-review
    """
    view = commit_view(_runs(root), run_id, label)
    _say(
        json.dumps(view, sort_keys=True) if as_json else f"checkpoint {view['label']} -> {view['head'][:12]}"
    )


@runs_group.command("revert")
@click.argument("run_id", metavar="RUN")
@click.argument("label")
@root_option
@json_option
@handled
def revert_cmd(run_id: str, label: str, root: Path, as_json: bool) -> None:
    """Return RUN to checkpoint LABEL (state only; spend never rolls back; tokens rotate).

    Example: strato flow revert <run> before-review
    """
    runs = _runs(root)
    _finish(runs, runs.revert(run_id, label), as_json)


@runs_group.command("cancel")
@click.argument("run_id", metavar="RUN")
@click.option("--reason", help="Recorded in the run's history.")
@root_option
@json_option
@handled
def cancel_cmd(run_id: str, reason: str | None, root: Path, as_json: bool) -> None:
    """Cancel RUN: outstanding tokens become stale. A background run's runner stops the
    agents it started (their whole process groups: SIGTERM, SIGKILL after a grace) and
    records `flow_cancelled`; this waits until it has (exit 1 if it has not yet).

    Example: strato flow cancel <run> --reason "superseded"
    """
    view = background.cancel_view(_runs(root), run_id, "cli", reason)
    _print_summary(view, as_json)
    if view["status"] != "cancelled":
        _fail(1, f"cancel of {view['runId']} is recorded; its runner has not stopped the run yet")


@runs_group.command("audit")
@click.argument("run_id", metavar="RUN")
@root_option
@json_option
@handled
def audit_cmd(run_id: str, root: Path, as_json: bool) -> None:
    """Every event of RUN, read from the history of its ref.

    Example: strato flow audit <run> --json
    """
    report = _runs(root).audit(run_id)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    for ev in report["events"]:
        _say(_event_line(ev))
    click.echo("attempts:")
    for row in report["attempts"]:
        number = "gate" if row.get("gate") else f"#{row['attempt']}"
        why = f"  {untrusted.line(row['reason'])}" if row["reason"] else ""
        resolution = row["resolution"] or "-"
        _say(f"  {row['stepId']:<16} {number:<5} {row['outcome']:<10} {resolution:<11}{why}")
    _say(f"status: {report['status']}")


def _event_line(ev: dict[str, Any]) -> str:
    detail = json.dumps(ev.get("detail", {}), sort_keys=True)
    return f"{ev['at']}  {ev['type']:<16} {ev.get('stepId', '-'):<16} {detail}"


@runs_group.command("list")
@root_option
@json_option
@handled
def list_cmd(root: Path, as_json: bool) -> None:
    """Every run in the repository with its status.

    Example: strato flow list --json
    """
    view = list_view(_runs(root))
    if as_json:
        click.echo(json.dumps(view, sort_keys=True))
        return
    for row in view["runs"]:
        _say(f"{row['runId']}  {row['flow']:<20} {row['status']}")
    if not view["runs"]:
        click.echo("no runs (start one with `strato run SPEC` or `strato flow plan SPEC`)")


@runs_group.command("show")
@click.argument("run_id", metavar="RUN")
@root_option
@json_option
@handled
def show_cmd(run_id: str, root: Path, as_json: bool) -> None:
    """RUN's status, ready steps, waiting gates, output or failure.

    Example: strato flow show <run>
    """
    _print_summary(show_view(_runs(root), run_id), as_json)


@runs_group.command("poll")
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
    doc = background.poll(_runs(root), run_id, cursor)
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
    else:
        for ev in doc["events"]:
            _say(_event_line(ev))
        bg = doc["bg"]
        gates = f", waiting: {', '.join(bg['pendingGates'])}" if bg["pendingGates"] else ""
        _say(f"{doc['runId']}: {bg['status']}{gates} (next cursor {doc['nextCursor']})")
    if doc["status"] == "failed":
        sys.exit(1)


@runs_group.command("resume")
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
    runs = _runs(root)
    run_id = runs.store.resolve(run_id)
    background.mark(runs, run_id)
    runs.resume(run_id, "cli")
    background.wake(runs, run_id)
    doc = background.poll(runs, run_id, 0)
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True))
    else:
        _say(f"{doc['runId']}: {doc['bg']['status']}")


@runs_group.command("watch")
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
    store = _runs(root).store
    run_id = store.resolve(run_id)
    seen: str | None = None
    while True:
        head = store.head(run_id)
        if head == seen:  # nothing new: one ref read per poll
            time.sleep(interval)
            continue
        for _commit, transition in store.since(head, seen):
            for ev in transition.get("events", []):
                _say(json.dumps(ev, sort_keys=True) if as_json else _event_line(ev))
        seen = head
        status = store.at(run_id, head).state["status"]
        if status in RUN_TERMINAL:
            sys.exit(0 if status == "completed" else 1)


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
        _fail(2, "give either SPEC or --resume RUN")
    runs = _runs(root)
    if resume is None:
        assert spec is not None
        run_id = runs.plan(_consented_spec(runs, spec), _parse_inputs(inputs, input_json), run_id).snap.run_id
    else:
        run_id = runs.load(resume).run_id  # a unique prefix names the run
    if background_:
        background.mark(runs, run_id)
        if resume is not None:
            runs.resume(run_id, "cli")
        background.wake(runs, run_id)
        _say(json.dumps({"status": "running", "runId": run_id}) if as_json else run_id)
        return
    if not as_json:
        _say(f"run {run_id}", err=True)
    with exclusive(background.runner_lock(runs, run_id)) as held:
        if held is None:
            _fail(1, f"run {run_id} is driven by its background runner (see `strato flow poll {run_id}`)")
        if resume is not None:
            runs.resume(run_id, "cli")
        snap = runs.drive(run_id, None if as_json else lambda ev: _say(_event_line(ev), err=True))
    view = summary(runs, snap)
    _print_summary(view, as_json)
    _exit_for(view)
