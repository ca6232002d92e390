"""`strato agent run|poll|cancel`: the agent-run tools from a shell, printing the same
documents with --json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from strato.agentruns import service
from strato.agentruns.store import Store
from strato.agents import groups, models, trust
from strato.agents.config import AgentConfigError
from tropo.console import REFUSED, USAGE, fail
from tropo.git.repo import NotARepository, require, workdir

_ROOT = click.option(
    "--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
    help="Any folder inside the workspace's git repository.",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object (stable keys).")


def _open(root: Path) -> tuple[Path, Store]:
    try:
        repo = require(root)
    except NotARepository as exc:
        fail(str(exc), USAGE, code="not_a_repository", prog="error")
    return workdir(repo).resolve(), Store(Path(repo.path))


def _show(doc: dict[str, Any], as_json: bool, line: str) -> None:
    click.echo(json.dumps(doc, sort_keys=True) if as_json else line)
    if doc["status"] in ("error", "not_found"):
        if not as_json:
            click.echo(f"error: {doc.get('reason', 'no agent run ' + doc.get('runId', ''))}", err=True)
        sys.exit(1)


@click.group("agent")
def agent() -> None:
    """Agent runs from .vivary/agents.toml (built-ins: claude, codex), in the foreground
    or detached, with their output kept under .git/vivary/agent-runs/."""


@agent.command("run")
@click.argument("name")
@click.option("--prompt", required=True, help="The task text handed to the agent.")
@click.option("--cwd", default=".", show_default=True, help="Folder inside the workspace to run in.")
@click.option("--model", default=None, help="Passed to the agent as VIVARY_AGENT_MODEL; recorded.")
@click.option("--background", is_flag=True, help="Detach: print the run id at once and return.")
@_ROOT
@_JSON
def run_cmd(
    name: str, prompt: str, cwd: str, model: str | None, background: bool, root: Path, as_json: bool
) -> None:
    """Run agent NAME once. Exit 0 when it completed (or started, with --background),
    1 when it failed, 2 for an unknown agent or a bad agents.toml.

    \b
    Examples:
      strato agent run claude --prompt "Summarise docs/runs.md"
      strato agent run codex --prompt "Fix the failing test" --background --json
    """
    work, store = _open(root)
    try:
        doc = service.start(store, work, name, prompt, cwd, model, None, background)
    except trust.Untrusted as exc:
        fail(str(exc), REFUSED, code="untrusted", prog="error")
    except (AgentConfigError, trust.TrustError, service.AgentRunError) as exc:
        fail(str(exc), USAGE, prog="error")
    if doc["status"] == "bg_started":
        line = f"{doc['runId']} started (pid {doc['pid']}); stream {doc['streamPath']}"
    else:
        line = doc.get("text") or doc.get("textTail", "")
    _show(doc, as_json, line)


@agent.command("poll")
@click.argument("run_id")
@_ROOT
@_JSON
def poll_cmd(run_id: str, root: Path, as_json: bool) -> None:
    """Show agent run RUN_ID: running (tail of its output), complete or error. Exit 1
    when it failed or does not exist.

    \b
    Example:
      strato agent poll ar-0123456789ab --json
    """
    doc = service.poll(_open(root)[1], run_id)
    tail = doc.get("text") or doc.get("textTail", "")
    _show(doc, as_json, f"{doc['status']}: {doc.get('eventsSeen', 0)} events\n{tail}".rstrip())


@agent.command("cancel")
@click.argument("run_id")
@click.option("--grace", type=click.FloatRange(min=0), default=None,
              help=f"Seconds between SIGTERM and SIGKILL [default: {groups.GRACE_S:g}, "
                   f"or ${groups.GRACE_ENV}].")
@_ROOT
@_JSON
def cancel_cmd(run_id: str, grace: float | None, root: Path, as_json: bool) -> None:
    """Stop agent run RUN_ID and every process it started (its process group).

    \b
    Example:
      strato agent cancel ar-0123456789ab
    """
    doc = service.cancel(_open(root)[1], run_id, by="cli", grace_s=grace)
    _show(doc, as_json, f"{doc['runId']}: {doc['status']}")


@click.command("models")
@_JSON
def models_command(as_json: bool) -> None:
    """The model catalog strato ships: each provider's models, effort levels and the call
    settings it supports; with --json also the file's SHA-256, its path and the package
    version.

    \b
    Example:
      strato models --json
    """
    view = models.catalog_view()
    if as_json:
        click.echo(json.dumps(view, sort_keys=True))
        return
    for name, provider in sorted(view["catalog"]["providers"].items()):
        click.echo(f"{name}: models {', '.join(provider['models'])}; effort {', '.join(provider['effort'])}")
    click.echo(f"catalog {view['path']} (sha256 {view['sha256'][:12]}, vivary-git {view['packageVersion']})")
