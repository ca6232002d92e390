"""Gate sufficiency `vivary.gate-verdict/v0`: does a capsule, with the receipt of the turn
that ran against it, carry enough proof for a named gate? It verifies evidence and never
applies or waives the gate; anything short of proof is `insufficient` or `refused`.

A gate names the checks that must have passed, whether every claim must be verified and
how many unresolved conflicts and unknowns it tolerates. A receipt that does not verify
against the capsule counts as no receipt at all.
"""

from __future__ import annotations

import math
from typing import Any

from tropo.canonical import fingerprint
from tropo.governed.bounds import nonempty
from tropo.governed.capsule import SCHEMA as CAPSULE_SCHEMA
from tropo.governed.receipt import receipt_verdict

SCHEMA = "vivary.gate-verdict/v0"
FIELDS = frozenset(
    {
        "name",
        "required_checks",
        "require_claims_verified",
        "max_unresolved_conflicts",
        "max_unresolved_unknowns",
    }
)
#: A worse outcome for the same check name is never overwritten by a better one.
_RANK = {"passed": 0, "skipped": 1, "failed": 2}
JSON = dict[str, Any]


class _NoReceipt:
    """Stands for "no receipt was given", which differs from a receipt given as null."""


NO_RECEIPT: Any = _NoReceipt()


def _finite(value: Any) -> bool:
    return type(value) is int or (type(value) is float and math.isfinite(value))


def well_formed(gate: dict[str, Any]) -> bool:
    """Every constraint the gate states has its declared type (numbers finite)."""
    checks = gate.get("required_checks")
    if checks is not None and not (isinstance(checks, list) and all(isinstance(n, str) for n in checks)):
        return False
    flag = gate.get("require_claims_verified")
    if flag is not None and not isinstance(flag, bool):
        return False
    return all(
        gate.get(field) is None or _finite(gate[field])
        for field in ("max_unresolved_conflicts", "max_unresolved_unknowns")
    )


def _verdict(**fields: Any) -> JSON:
    content = {"schema": SCHEMA, **fields}
    return {**content, "fingerprint": fingerprint(content)}


def _usable_capsule(capsule: Any) -> bool:
    workspace = capsule.get("workspace") if isinstance(capsule, dict) else None
    return (
        isinstance(capsule, dict)
        and nonempty(capsule.get("capsule_id"))
        and nonempty(capsule.get("fingerprint"))
        and isinstance(workspace, dict)
        and nonempty(workspace.get("fingerprint"))
        and all(isinstance(capsule.get(field), list) for field in ("claims", "conflicts", "unknowns"))
    )


def _worst_outcomes(checks: Any) -> dict[str, str]:
    worst: dict[str, str] = {}
    for check in checks if isinstance(checks, list) else []:
        if isinstance(check, dict) and isinstance(check.get("name"), str):
            outcome = check.get("outcome")
            outcome = outcome if outcome in _RANK else "failed"
            name = check["name"]
            if name not in worst or _RANK[outcome] > _RANK[worst[name]]:
                worst[name] = outcome
    return worst


def evaluate(gate: Any, capsule: Any, receipt: Any = NO_RECEIPT) -> JSON:
    """The gate verdict for ``capsule`` (and ``receipt`` when one is given). Never raises:
    no capsule or gate is a refusal, a malformed constraint an insufficiency."""
    binding = {
        field: value if isinstance(capsule, dict) and isinstance(value := capsule.get(key), str) else None
        for field, key in (("id", "capsule_id"), ("fingerprint", "fingerprint"))
    }
    name = gate.get("name") if isinstance(gate, dict) and isinstance(gate.get("name"), str) else None
    given = receipt is not NO_RECEIPT

    def early(outcome: str, code: str, gate_name: str | None) -> JSON:
        rid = receipt_verdict(receipt)["receipt_id"] if given else None
        return _verdict(gate=gate_name, capsule=binding, receipt_id=rid, outcome=outcome, reason_codes=[code])

    if not _usable_capsule(capsule):
        return early("refused", "missing_capsule", name)
    if capsule.get("schema") != CAPSULE_SCHEMA:
        return early("refused", "unsupported_schema", name)
    if not name:
        return early("refused", "missing_gate", None)
    if not well_formed(gate):
        return early("insufficient", "malformed_gate", name)

    codes: list[str] = []
    failing: list[JSON] = []
    conflicts, unknowns = len(capsule["conflicts"]), len(capsule["unknowns"])
    for count, limit, code in (
        (conflicts, gate.get("max_unresolved_conflicts"), "unresolved_conflicts_exceed_limit"),
        (unknowns, gate.get("max_unresolved_unknowns"), "unresolved_unknowns_exceed_limit"),
    ):
        if limit is not None and not count <= limit:
            codes.append(code)
    verdict = receipt_verdict(receipt, capsule) if given else None
    usable = verdict is not None and verdict["outcome"] == "verified"
    if verdict is not None and not usable:
        codes.append("receipt_invalid")
    required = gate.get("required_checks") or []
    if required and not usable:
        codes.append("receipt_missing_for_required_checks")
    elif required:
        worst = _worst_outcomes(receipt.get("checks"))
        for check in required:
            actual = worst.get(check, "missing")
            if actual != "passed":
                failing.append({"name": check, "expected": "passed", "actual": actual})
                codes.append("required_check_missing" if actual == "missing" else "required_check_failed")
    verified_count = None
    if gate.get("require_claims_verified") and not usable:
        codes.append("receipt_missing_for_claims_verification")
    elif gate.get("require_claims_verified"):
        listed = receipt.get("claims_verified")
        ids = {i for i in listed if isinstance(i, str)} if isinstance(listed, list) else set()
        verified_count = sum(
            isinstance(claim, dict) and isinstance(claim.get("id"), str) and claim["id"] in ids
            for claim in capsule["claims"]
        )
        if verified_count < len(capsule["claims"]):
            codes.append("claims_not_fully_verified")
    codes = list(dict.fromkeys(codes))
    return _verdict(
        gate=name,
        capsule=binding,
        receipt_id=verdict["receipt_id"] if verdict is not None else None,
        outcome="insufficient" if codes else "sufficient",
        reason_codes=codes,
        failing_checks=failing,
        unresolved_conflicts=conflicts,
        unresolved_unknowns=unknowns,
        claims_total=len(capsule["claims"]),
        claims_verified=verified_count,
        receipt_outcome=verdict["outcome"] if verdict is not None else None,
    )
