"""`strato decide --governed` and `strato receipt`: file and terminal I/O around the
pure decision and receipt code."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from strato.decide.decision import (
    Refusal,
    RequestDocumentError,
    decide,
    load_request,
)
from strato.decide.envelope import ACTOR_KINDS, AUTHORITY_CLASSES
from strato.decide.request import RequestBuildError, build_request
from tropo.console import CANONICAL, USAGE, emit, fail
from tropo.governed.capsule import is_intact
from tropo.governed.freshness import parse_instant
from tropo.governed.receipt import OUTCOMES, ReceiptError, build_receipt


def _read_text(source: str) -> str:
    raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    return raw.decode("utf-8")


@click.command(
    "decide",
    epilog="Example: strato decide --governed --json --strict request.json",
)
@click.option(
    "--governed",
    is_flag=True,
    required=True,
    help="Opt in to the governed policy contract (required).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the decision document as JSON.")
@click.option("--strict", is_flag=True, help="Exit 1 when the decision is blocked or asks for a gate.")
@click.argument("request", metavar="REQUEST.json|-")
def decide_command(governed: bool, as_json: bool, strict: bool, request: str) -> None:
    """Decide the next governed loop step for a decision request.

    Exit 0 with a vivary.strato-decision/v0 document (advisory), 1 under --strict
    when it is blocked or needs a gate, 2 with a vivary.strato-decision-refusal/v0
    document when the request is malformed, stale or altered. Nothing is persisted.
    """
    try:
        result = decide(load_request(_read_text(request)))
    except RecursionError:
        result = Refusal(("request_too_deeply_nested",))
        click.echo("strato: the request is nested too deeply to read", err=True)
    except (OSError, UnicodeError, RequestDocumentError) as error:
        result = Refusal(("invalid_request_document",))
        click.echo(f"strato: cannot read request {request}: {error}", err=True)
    else:
        if isinstance(result, Refusal):
            click.echo(f"strato: request refused: {', '.join(result.reason_codes)}", err=True)
    document = result.document()
    codes = document["reason_codes"]
    reasons = ["reasons: " + ", ".join(codes)] if codes else []
    emit(as_json, document, [f"strato decide: {document['decision']}", *reasons], CANONICAL)
    sys.exit(result.exit_code(strict))


def _load_json(path: str, what: str) -> Any:
    try:
        return load_request(_read_text(path))
    except (OSError, UnicodeError, RequestDocumentError, RecursionError) as error:
        raise click.UsageError(f"cannot read {what} {path}: {error}") from error


def _check_results(capsule: dict[str, Any], pairs: tuple[str, ...], files: tuple[str, ...]) -> list[Any]:
    commands = {check["name"]: check["command"] for check in capsule["required_checks"]}
    checks: list[Any] = []
    for path in files:
        loaded = _load_json(path, "checks")
        if not isinstance(loaded, list) or not all(isinstance(c, dict) for c in loaded):
            raise click.UsageError(f"{path}: expected a JSON list of check objects")
        checks.extend(loaded)
    for pair in pairs:
        name, sep, outcome = pair.rpartition("=")
        if not sep or name not in commands:
            known = ", ".join(sorted(commands)) or "none"
            raise click.UsageError(f"--check {pair!r}: use NAME=OUTCOME; required checks: {known}")
        checks.append({"name": name, "command": commands[name], "outcome": outcome})
    return checks


@click.command(
    "receipt",
    epilog=(
        "Example: strato receipt capsule.json --check tropo-check=passed "
        "--actor agent:codex --harness codex --json"
    ),
)
@click.argument("capsule_path", metavar="CAPSULE.json|-")
@click.option(
    "--check",
    "pairs",
    multiple=True,
    metavar="NAME=OUTCOME",
    help=f"A required check's outcome ({'|'.join(OUTCOMES)}); repeatable.",
)
@click.option(
    "--checks",
    "files",
    multiple=True,
    metavar="FILE",
    help="A JSON list of {name, command, outcome, detail?} results; repeatable.",
)
@click.option("--actor", required=True, help="Who ran the turn (the runtime actor).")
@click.option("--harness", required=True, help="What ran it, e.g. claude-code or a flow engine.")
@click.option("--model", help="The model, if any.")
@click.option(
    "--provenance",
    "provenance",
    multiple=True,
    metavar="KIND=REF",
    help="A provenance reference such as run=<run-id>; repeatable.",
)
@click.option("--created-at", help="The receipt time (ISO-8601 with a zone); default now.")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt document.")
def receipt_command(
    capsule_path: str,
    pairs: tuple[str, ...],
    files: tuple[str, ...],
    actor: str,
    harness: str,
    model: str | None,
    provenance: tuple[str, ...],
    created_at: str | None,
    as_json: bool,
) -> None:
    """Build an Execution Receipt for a capsule from check results.

    The capsule must be intact (id and fingerprint recompute) and every check must
    be one of its required checks with the exact command, so the receipt verifies.
    """
    capsule = _load_json(capsule_path, "capsule")
    if not is_intact(capsule):
        raise click.UsageError(f"{capsule_path}: not an intact vivary.task-capsule/v0")
    when = datetime.now(UTC) if created_at is None else parse_instant(created_at)
    if when is None:
        raise click.UsageError(f"--created-at {created_at!r}: use ISO-8601 with a zone")
    runtime = {"harness": harness, **({"model": model} if model else {}), "actor": actor}
    refs = []
    for item in provenance:
        kind, sep, ref = item.partition("=")
        if not (sep and kind and ref):
            raise click.UsageError(f"--provenance {item!r}: use KIND=REF")
        refs.append({"kind": kind, "ref": ref})
    try:
        receipt = build_receipt(
            capsule,
            runtime=runtime,
            checks=_check_results(capsule, pairs, files),
            created_at=when,
            provenance=refs,
        )
    except ReceiptError as error:
        raise click.UsageError(str(error)) from error
    if as_json:
        click.echo(json.dumps(receipt, sort_keys=True, separators=(",", ":")))
        return
    verified = len(receipt["claims_verified"])
    click.echo(
        f"strato receipt: {receipt['receipt_id']} for {capsule['capsule_id']}: "
        f"{len(receipt['checks'])} check(s), {verified}/{len(receipt['claims_in_scope'])} "
        "claims verified"
    )


@click.command(
    "decide-request",
    epilog=(
        "Example: tropo find --governed 'what next' > capsule.json && "
        "strato decide-request capsule.json --actor agent:me > request.json && "
        "strato decide --governed request.json"
    ),
)
@click.argument("capsule", metavar="CAPSULE.json|-")
@click.option("--actor", "actor_id", required=True, help="Who asks (e.g. agent:me).")
@click.option(
    "--kind", "actor_kind", type=click.Choice(sorted(ACTOR_KINDS)), default="agent", show_default=True
)
@click.option(
    "--authority", type=click.Choice(sorted(AUTHORITY_CLASSES)), default="contributor", show_default=True
)
@click.option("--project", help="The scope's project name (default: the workspace folder's name).")
@click.option("--json", "as_json", is_flag=True, help="Errors as a JSON object on stdout too.")
def decide_request_command(
    capsule: str, actor_id: str, actor_kind: str, authority: str, project: str | None, as_json: bool
) -> None:
    """Wrap a Task Capsule (from `tropo find --governed`) in a decision request, stamped
    now, and print it: the input `strato decide --governed` reads. Exit 2 when the
    capsule cannot be read."""
    try:
        doc = build_request(
            load_request(_read_text(capsule)),
            actor_id=actor_id,
            actor_kind=actor_kind,
            authority=authority,
            project=project,
            now=datetime.now(UTC),
        )
    except (OSError, UnicodeError, RequestDocumentError, RecursionError, RequestBuildError) as error:
        fail(f"cannot build a request from {capsule}: {error}", USAGE, code="invalid_capsule", prog="strato")
    click.echo(json.dumps(doc, indent=2, sort_keys=True))
