"""What the run commands (`strato flow ...`, `strato run`) share at a terminal: their
options, the expected errors as the console's error document, the run summary they print,
reading a spec the person named, and the author's text shown with its hidden characters."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from strato.agents import spectrust
from strato.runs.engine import bounds
from strato.runs.service import Runs
from strato.runs.store import Outcome
from strato.runs.views.documents import EXPECTED_ERRORS, describe_error, failed, outcome_view
from tropo import untrusted
from tropo.console import USAGE, fail

F = TypeVar("F", bound=Callable[..., Any])


def handled(fn: F) -> F:
    """Map the expected run errors to their exit code and one line on stderr (the error
    document under --json, with what a script needs: `candidates`, `available`, `errors`)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EXPECTED_ERRORS as exc:
            exit_code, message, detail = describe_error(exc)
            fail(message, exit_code, code=detail.pop("code"), prog="error", **detail)

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


def runs_at(root: Path) -> Runs:
    return Runs(root)


def parse_inputs(pairs: tuple[str, ...], input_json: str | None) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    if input_json is not None:
        value = json_arg(input_json, "--input-json")
        if not isinstance(value, dict):
            fail("--input-json must be a JSON object", USAGE, prog="error")
        inputs.update(value)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            fail(f"--input expects key=value, got {pair!r}", USAGE, prog="error")
        try:
            inputs[key] = bounds.loads(text, f"--input {key}")
        except json.JSONDecodeError:
            inputs[key] = text
    return inputs


def json_arg(text: str, what: str) -> Any:
    if text.startswith("@"):
        try:
            path = Path(text[1:])
            if path.stat().st_size > bounds.MAX_REQUEST_BYTES:
                fail(f"{what}: {path} is larger than 16 MiB", USAGE, prog="error")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"{what}: cannot read {text[1:]}: {exc}", USAGE, prog="error")
    try:
        return bounds.loads(text, what)
    except json.JSONDecodeError as exc:
        fail(f"{what}: not JSON: {exc}", USAGE, prog="error")


def say(text: str, err: bool = False) -> None:
    """Print one line of this CLI's output. A run's text (its steps' `do`, ids, inputs,
    reasons, notes, failures) is its author's, and a run ref can come from another clone
    or an MCP client: every hidden character is shown as U+XXXX (:mod:`tropo.untrusted`)."""
    click.echo(untrusted.visible(text), err=err)


def print_summary(view: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(view, sort_keys=True))
        return
    say(f"run {view['runId']} ({view['flow']}): {view['status']}")
    for entry in view["ready"]:
        say(f"  ready  {entry['id']} (attempt {entry['attempt']}, token {entry['dispatchToken']})")
        if "dispatchId" in entry:
            say(f"         dispatch {entry['dispatchId']}, generation {entry['generation']}")
        say(f"         {untrusted.line(entry['do'], 200)}")
    for gate in view["gates"]:
        say(f"  gate   {gate['stepId']} waiting (round {gate['round']}, token {gate['gateToken']})")
        for step, output in gate.get("subject", {}).items():
            say(f"         asks about {step}: {json.dumps(output)[:2000]}")
    for row in view.get("attempts", []):
        why = f"  {untrusted.line(row['reason'])}" if row["reason"] else ""
        say(f"  tried  {row['stepId']} #{row['attempt']} {row['outcome']} -> {row['resolution']}{why}")
    if "output" in view:
        say(f"  output {json.dumps(view['output'])}")
    if "failure" in view:
        say(f"  failure {untrusted.line(view['failure']['reason'])}")


def exit_for(view: dict[str, Any]) -> None:
    if failed(view):
        sys.exit(1)


def finish(runs: Runs, outcome: Outcome, as_json: bool) -> None:
    view = outcome_view(runs, outcome)
    print_summary(view, as_json)
    exit_for(view)


def _read_spec(path: Path) -> str:
    try:
        if path.stat().st_size > bounds.MAX_REQUEST_BYTES:
            fail(f"{path}: larger than 16 MiB", USAGE, prog="error")
        return path.read_text(encoding="utf-8")
    except OSError as exc:  # the reason alone: "[Errno 2] ... 'x.yaml'" repeats the path
        fail(f"cannot read spec {path}: {(exc.strerror or str(exc)).lower()}", USAGE, prog="error")
    except UnicodeDecodeError:
        fail(f"cannot read spec {path}: not UTF-8", USAGE, prog="error")


def consented_spec(runs: Runs, path: Path) -> str:
    """The spec the person named at their own prompt, approved as read (as `bash FILE`
    runs what it is given): its commands may run in this repository from now on."""
    text = _read_spec(path)
    where, root = path.resolve(), runs.root.resolve()
    name = str(where.relative_to(root)) if where.is_relative_to(root) else str(where)
    spectrust.approve(runs.root, name, text)
    return text


def event_line(ev: dict[str, Any]) -> str:
    detail = json.dumps(ev.get("detail", {}), sort_keys=True)
    return f"{ev['at']}  {ev['type']:<16} {ev.get('stepId', '-'):<16} {detail}"
