"""``exo control --governed``: one request document in, one decision document out.

Exit codes are the suite's: 0 with the document printed, whatever it decided; 1 with
``--strict`` when it refused or carries a reason code; 2 for usage errors.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from exo.control import envelope
from exo.control.from_repo import FromRepoError, fill
from exo.workspace import WorkspaceError, load_worktree


def _request(source: str) -> Any:
    if source == "-":
        return envelope.read(sys.stdin.buffer)
    try:
        with Path(source).open("rb") as handle:
            return envelope.read(handle)
    except OSError as exc:
        raise envelope.DocumentError(envelope.INVALID_DOCUMENT) from exc


@click.command("control", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("request", metavar="REQUEST")
@click.option("--governed", is_flag=True, help="Required: dispatch a governed request.")
@click.option("--json", "as_json", is_flag=True, help="Emit canonical compact JSON.")
@click.option("--strict", is_flag=True, help="Exit 1 on a refusal or any reason code.")
@click.option("--from-repo", is_flag=True,
              help="Replace the request's claims and tasks with the workspace's own.")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Workspace root for --from-repo (default: found from the current "
              "directory).")
def control_command(request: str, governed: bool, as_json: bool, strict: bool,
                    from_repo: bool, root: Path | None) -> None:
    """Dispatch one governed control request (a JSON file, or - for stdin).

    The request is vivary.exo-control-request/v0: {schema, operation, state, input},
    operation one of claim, release, expire_leases, dependencies, handoff,
    record_execution, complete, task_view.

    \b
    Example:
      exo control --governed --json request.json
      exo control --governed --from-repo --json request.json
      echo '{"schema":"vivary.exo-control-request/v0","operation":"expire_leases",
             "state":{"claims":[]},"input":{"now":"2026-01-01T00:00:00Z"}}' \\
        | exo control --governed --strict -
    """
    if not governed:
        raise click.UsageError("control requires --governed")
    try:
        parsed = _request(request)
        if from_repo:
            parsed = fill(parsed, load_worktree(root))
        document = envelope.answer(parsed)
    except (WorkspaceError, FromRepoError) as exc:
        click.echo(f"exo: {exc}", err=True)
        sys.exit(2)
    except envelope.DocumentError as exc:
        document = envelope.refusal([exc.code])
    click.echo(envelope.as_json(document) if as_json else "\n".join(envelope.as_text(document)))
    sys.exit(1 if strict and envelope.is_refused(document) else 0)
