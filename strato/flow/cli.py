"""`strato flow validate | migrate | compile-speckit`: validate a spec, classify a legacy
spec, compile spec-kit tasks (the group `strato flow` is `strato.runs.cli.group`).

Exit codes: 0 success, 1 findings (invalid spec, unsupported constructs, a refused
compile), 2 usage or unreadable input. Errors are one line on stderr."""

from __future__ import annotations

import sys
from collections.abc import Collection
from pathlib import Path

import click

from strato.agents.config import AgentConfigError, load_config
from strato.agents.trust import TrustError
from strato.flow.errors import UNREADABLE_CODES
from strato.flow.migrate import check, render_text
from strato.flow.spec import BUILTIN_AGENTS
from strato.flow.speckit import SpeckitError, compile_tasks
from strato.flow.validate import load_spec
from strato.flow.yamlload import SpecReadError, read_spec_file
from tropo.console import PRETTY_UNICODE, REFUSED, USAGE, emit, fail, print_json, stop
from tropo.git.repo import NotARepository, require, workdir

_JSON = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


def _workspace_agents() -> Collection[str]:
    """The agent names of the workspace around the current folder (built-ins outside one);
    those of an agents file not yet approved count too: a spec may name them, and they
    are refused only when one would run."""
    try:
        return load_config(workdir(require(Path.cwd()))).known
    except NotARepository:
        return BUILTIN_AGENTS
    except (AgentConfigError, TrustError) as exc:
        fail(str(exc), prog="error")


@click.command("validate")
@click.argument("file", type=click.Path(path_type=Path))
@_JSON
def validate_cmd(file: Path, as_json: bool) -> None:
    """Validate a `.stratum.yaml` spec (version: 1).

    Prints `{"valid": true}` or every structural error / the first semantic error as
    `{code, path, message}`. Exit 0 valid, 1 invalid, 2 unreadable.

    Example: strato flow validate plan.stratum.yaml --json
    """
    spec, errors = load_spec(file, _workspace_agents())
    if spec is not None:
        emit(as_json, {"valid": True}, f"{file}: valid", PRETTY_UNICODE)
        return
    payload = {"valid": False, "errors": [e.to_json() for e in errors]}
    unreadable = any(e.code in UNREADABLE_CODES for e in errors)
    if unreadable:  # the report is the error document (vivary-stratum's)
        if as_json:
            print_json(payload, PRETTY_UNICODE)
        stop(f"{file}: {errors[0].message}", USAGE, prog="error")
    emit(as_json, payload, [f"{file}: {e}" for e in errors], PRETTY_UNICODE)
    sys.exit(1)


@click.command("migrate")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Report how v0.x constructs map to v1 (the only mode).",
)
@_JSON
def migrate_cmd(file: Path, check_only: bool, as_json: bool) -> None:
    """Classify a legacy v0.x spec against v1; report only, never writes YAML.

    Exit 0 when everything has a v1 form, 1 when something is unsupported or the file
    is not a v0.x spec, 2 on usage errors.

    Example: strato flow migrate --check old.stratum.yaml
    """
    if not check_only:
        fail("migrate is report-only: pass --check (no YAML is ever emitted)", prog="error")
    try:
        text = read_spec_file(file)
    except SpecReadError as exc:
        fail(f"{file}: {exc}", prog="error")
    report = check(text)
    emit(as_json, report.to_json(), render_text(report, str(file)), PRETTY_UNICODE)
    sys.exit(1 if report.has_unsupported else 0)


@click.command("compile-speckit")
@click.argument("tasks_dir", type=click.Path(path_type=Path))
@click.option(
    "--flow", "flow_name", default="tasks", show_default=True, help="Name of the compiled flow."
)
@_JSON
def compile_speckit_cmd(tasks_dir: Path, flow_name: str, as_json: bool) -> None:
    """Compile a spec-kit tasks directory (tasks/*.md) into a v1 spec on stdout.

    `[P]` in a title marks a parallel task; acceptance criteria become ensures
    (file exists / file contains / tests pass / no lint errors) or "Also verify" text.

    Example: strato flow compile-speckit specs/001/tasks --flow build > build.stratum.yaml
    """
    try:
        compiled = compile_tasks(tasks_dir, flow_name)
    except SpeckitError as exc:
        if as_json:  # Stratum's error document of compile-speckit
            print_json({"status": "error", "error_type": exc.error_type, "message": exc.message},
                       PRETTY_UNICODE)
        usage = exc.error_type == "directory_not_found" or flow_name == "entry"
        stop(f"{exc.error_type}: {exc.message}", USAGE if usage else REFUSED, prog="error")
    emit(as_json, compiled.to_json(), compiled.yaml.rstrip("\n"), PRETTY_UNICODE)
