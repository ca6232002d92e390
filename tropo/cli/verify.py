"""``tropo verify --governed REQUEST|-`` (and ``vivary verify``): one governed capsule,
receipt and gate verified together, nothing written. The documents, reason codes and exit
statuses are vivary-ozone 0.3.2's: 0 when verified (whatever the outcome), 1 with
``--strict`` unless the outcome is ``sufficient``, 2 for a refused request or a document
that is not JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from tropo.canonical import DuplicateKeyError, unique_keys
from tropo.cli.main import main
from tropo.console import CANONICAL, USAGE, emit, fail, stop
from tropo.governed import request as governed


def _read(source: str) -> Any:
    raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    return json.loads(raw.decode("utf-8"), object_pairs_hook=unique_keys)


def _show(result: dict[str, Any], as_json: bool) -> None:
    """The verification document (or refusal) in the suite's canonical layout, or its outcome."""
    codes = result["reason_codes"]
    reasons = ["reasons: " + ", ".join(json.dumps(code)[1:-1] for code in codes)] if codes else []
    emit(as_json, result, [f"tropo verify: {result['outcome']}", *reasons], CANONICAL)


def _refuse(code: str, message: str, as_json: bool) -> NoReturn:
    """The governed refusal document (vivary-ozone's), the one line, exit 2."""
    _show(governed.refusal([code]), as_json)
    stop(message, USAGE, prog="tropo verify")


@main.command("verify")
@click.argument("request", metavar="REQUEST|-", required=False)
@click.option("--governed", "governed_flag", is_flag=True,
              help="Opt in to governed receipt and gate verification.")
@click.option("--strict", is_flag=True, help="Exit 1 unless the evidence is sufficient.")
@click.option("--json", "as_json", is_flag=True, help="The result as one compact JSON document.")
def verify_cmd(request: str | None, governed_flag: bool, strict: bool, as_json: bool) -> None:
    """Verify one `vivary.ozone-verification-request/v0` (a Task Capsule, perhaps the
    Execution Receipt of the turn run against it, and a gate) without writing anything:
    the receipt verdict, the gate verdict and one outcome, sufficient, insufficient or
    refused. Exit 0 when verified, 1 with --strict unless sufficient, 2 when refused.

    \b
    Examples:
      tropo verify --governed request.json
      tropo verify --governed - --json --strict < request.json
    """
    if not governed_flag:
        fail("verify requires --governed")
    if not request:
        fail("verify requires a request JSON file or - for stdin")
    try:
        document = _read(request)
    except RecursionError:
        _refuse("request_too_deeply_nested", "request document is too deeply nested", as_json)
    except DuplicateKeyError as exc:
        _refuse("invalid_request_document", f"invalid request document: {exc}", as_json)
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError included
        _refuse("invalid_request_document", "invalid request document", as_json)
    result = governed.verify(document)
    _show(result, as_json)
    if result["schema"] == governed.REFUSAL_SCHEMA:
        sys.exit(2)
    sys.exit(1 if strict and result["outcome"] != "sufficient" else 0)
