"""The Execution Receipt `vivary.execution-receipt/v0`: evidence of what a turn ran,
bound to the exact capsule and workspace it ran against.

Building one is pure (the clock is an argument); verifying one recomputes its body
fingerprint, its deterministic id and, given the capsule, its binding and the authority
of every check it lists.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tropo.canonical import deterministic_id, fingerprint, is_lossless
from tropo.governed.bounds import nonempty
from tropo.governed.capsule import body

SCHEMA = "vivary.execution-receipt/v0"
VERDICT_SCHEMA = "vivary.receipt-verdict/v0"
FIELDS = frozenset(
    {
        "receipt_id",
        "schema",
        "capsule",
        "workspace",
        "runtime",
        "checks",
        "claims_in_scope",
        "claims_verified",
        "claims_unverified",
        "unresolved_conflicts",
        "unresolved_unknowns",
        "provenance",
        "created_at",
        "fingerprint",
    }
)
OUTCOMES = ("passed", "failed", "skipped")
PROVENANCE_NOTE = "provenance reference only; not proof of correctness"
#: Reasons meaning "not a receipt at all" (refused) rather than "a receipt that fails".
_UNRECOGNIZED = frozenset({"missing_receipt", "unsupported_schema"})


class ReceiptError(ValueError):
    """The inputs cannot make a receipt that would verify; the message says why."""


def js_timestamp(instant: datetime) -> str:
    """JavaScript's `Date.toISOString()`: UTC with milliseconds and a `Z`."""
    utc = instant.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def receipt_id(capsule_fingerprint: str, created_at: str, actor: str) -> str:
    return deterministic_id(
        "receipt", {"capsule": capsule_fingerprint, "created_at": created_at, "actor": actor}
    )


def checks_authorized(checks: Any, capsule: dict[str, Any]) -> bool:
    """Every listed check names one of the capsule's required checks with its exact
    command, so a receipt cannot vouch for work the capsule never asked for."""
    required = capsule.get("required_checks")
    if not isinstance(checks, list) or not isinstance(required, list):
        return False
    commands: dict[str, str] = {}
    for check in required:
        if not isinstance(check, dict):
            return False
        name, command = check.get("name"), check.get("command")
        if not (isinstance(name, str) and name.strip() and isinstance(command, str) and command.strip()):
            return False
        if commands.setdefault(name, command) != command:
            return False
    return all(
        isinstance(check, dict)
        and isinstance(check.get("name"), str)
        and isinstance(check.get("command"), str)
        and commands.get(check["name"]) == check["command"]
        for check in checks
    )


def build_receipt(
    capsule: dict[str, Any],
    *,
    runtime: dict[str, Any],
    checks: list[dict[str, Any]],
    created_at: datetime,
    provenance: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A receipt for `capsule` from check results. Claims count as verified only when
    there is at least one check and every check passed."""
    workspace = capsule.get("workspace")
    if not (
        nonempty(capsule.get("capsule_id"))
        and nonempty(capsule.get("fingerprint"))
        and isinstance(workspace, dict)
        and nonempty(workspace.get("fingerprint"))
    ):
        raise ReceiptError("the capsule has no complete id, fingerprint and workspace binding")
    if not nonempty(runtime.get("actor")):
        raise ReceiptError("the runtime needs a non-empty actor")
    for check in checks:
        if check.get("outcome") not in OUTCOMES:
            raise ReceiptError(f"check {check.get('name')!r}: outcome must be one of {', '.join(OUTCOMES)}")
    if not checks_authorized(checks, capsule):
        raise ReceiptError(
            "every check must name one of the capsule's required checks with its exact command"
        )
    stamp = js_timestamp(created_at)
    claim_ids = [claim["id"] for claim in capsule["claims"]]
    all_passed = bool(checks) and all(check["outcome"] == "passed" for check in checks)
    content = {
        "schema": SCHEMA,
        "capsule": {"id": capsule["capsule_id"], "fingerprint": capsule["fingerprint"]},
        "workspace": {
            "fingerprint": workspace["fingerprint"],
            "observed_at": workspace.get("observed_at"),
        },
        "runtime": runtime,
        "checks": checks,
        "claims_in_scope": claim_ids,
        "claims_verified": claim_ids if all_passed else [],
        "claims_unverified": [] if all_passed else claim_ids,
        "unresolved_conflicts": [
            {"id": conflict["id"], "decision": conflict["decision"]} for conflict in capsule["conflicts"]
        ],
        "unresolved_unknowns": capsule["unknowns"],
        "provenance": [{**entry, "note": PROVENANCE_NOTE} for entry in provenance or []],
        "created_at": stamp,
    }
    return {
        "receipt_id": receipt_id(capsule["fingerprint"], stamp, runtime["actor"]),
        **content,
        "fingerprint": fingerprint(content),
    }


def _bound(receipt: dict[str, Any]) -> bool:
    capsule, workspace = receipt.get("capsule"), receipt.get("workspace")
    return (
        isinstance(capsule, dict)
        and nonempty(capsule.get("id"))
        and nonempty(capsule.get("fingerprint"))
        and isinstance(workspace, dict)
        and nonempty(workspace.get("fingerprint"))
    )


def verify_receipt(receipt: Any, capsule: dict[str, Any] | None = None) -> list[str]:
    """Why the receipt cannot be trusted (`[]` when it verifies), in the vocabulary of
    Vivary's receipt verifier."""
    if not isinstance(receipt, dict):
        return ["missing_receipt"]
    if receipt.get("schema") != SCHEMA:
        return ["unsupported_schema"]
    shape = []
    claimed = receipt.get("fingerprint")
    if not (isinstance(claimed, str) and claimed.startswith("sha256:")):
        shape.append("missing_fingerprint")
    if not nonempty(receipt.get("receipt_id")):
        shape.append("missing_id")
    if not _bound(receipt):
        shape.append("missing_binding")
    if shape:
        return shape
    if set(receipt) != FIELDS:
        return ["receipt_invalid"]
    rest = body(receipt, "receipt_id", "fingerprint")
    if not is_lossless(rest) or fingerprint(rest) != claimed:
        return ["fingerprint_mismatch"]
    runtime = receipt["runtime"]
    actor = runtime.get("actor") if isinstance(runtime, dict) else None
    created_at = receipt["created_at"]
    if not (nonempty(created_at) and isinstance(actor, str) and actor) or receipt["receipt_id"] != receipt_id(
        receipt["capsule"]["fingerprint"], created_at, actor
    ):
        return ["receipt_id_mismatch"]
    if capsule is None:
        return []
    workspace = capsule.get("workspace")
    if not (
        receipt["capsule"]["id"] == capsule.get("capsule_id")
        and receipt["capsule"]["fingerprint"] == capsule.get("fingerprint")
        and isinstance(workspace, dict)
        and nonempty(workspace.get("fingerprint"))
        and receipt["workspace"]["fingerprint"] == workspace["fingerprint"]
    ):
        return ["capsule_binding_mismatch"]
    if not checks_authorized(receipt["checks"], capsule):
        return ["receipt_invalid"]
    return []


def receipt_verdict(receipt: Any, capsule: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`verify_receipt`'s answer as Vivary's fingerprinted `vivary.receipt-verdict/v0`
    document: `verified`, `insufficient` (a receipt that fails) or `refused` (none)."""
    codes = verify_receipt(receipt, capsule)
    if codes and codes[0] in _UNRECOGNIZED:
        outcome, rid = "refused", None
    else:
        outcome = "insufficient" if codes else "verified"
        rid = receipt["receipt_id"] if nonempty(receipt.get("receipt_id")) else None
    content = {"schema": VERDICT_SCHEMA, "outcome": outcome, "reason_codes": codes, "receipt_id": rid}
    return {**content, "fingerprint": fingerprint(content)}
