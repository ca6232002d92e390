"""Receipt verdicts and gate sufficiency as functions, side by side with vivary-core 0.2.7's
`verify_receipt_integrity` and `evaluate_gate_sufficiency`: the documents a governed
request never reaches (no capsule, a foreign schema, no gate, a malformed constraint, a
receipt with no fingerprint, id or binding) are identical too."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import governed as b
from tests.support.sealed import CAPSULE, GATE, edit, resealed_receipt
from tests.support.tropo_parity import side_by_side

DRIVER = Path(__file__).with_name("verdict_driver.py")
RECEIPT = b.receipt(CAPSULE)
GATES: list[Any] = [
    GATE, {"name": "m"}, {"name": ""}, None, "merge", {"name": "m", "required_checks": "x"},
    {"name": "m", "require_claims_verified": 1}, {"name": "m", "max_unresolved_unknowns": True},
    {"name": "m", "required_checks": ["tropo-check", "tropo-check", "lint"]},
    {"name": "m", "max_unresolved_conflicts": -1, "max_unresolved_unknowns": -0.5},
]
CAPSULES: list[Any] = [
    CAPSULE, None, {}, edit(CAPSULE, "schema", "vivary.task-capsule/v1"),
    edit(CAPSULE, "claims", "none"), edit(CAPSULE, "workspace.fingerprint", ""),
    edit(CAPSULE, "capsule_id", 7),
]
RECEIPTS: list[Any] = [
    RECEIPT, None, [], {}, edit(RECEIPT, "schema", "x"), edit(RECEIPT, "fingerprint", "md5:0"),
    edit(RECEIPT, "receipt_id", ""), edit(RECEIPT, "capsule.id", ""),
    edit(RECEIPT, "workspace", ...), edit(RECEIPT, "extra", 1),
    resealed_receipt(RECEIPT, "capsule.id", "capsule_other"),
    resealed_receipt(RECEIPT, "workspace.fingerprint", "sha256:other"),
    resealed_receipt(RECEIPT, "checks.0.command", "true"),
    resealed_receipt(RECEIPT, "checks.0.outcome", "flaky"),
    resealed_receipt(RECEIPT, "runtime", {"harness": "t"}),
    resealed_receipt(RECEIPT, "claims_verified", ["x", 1]),
    edit(RECEIPT, "created_at", 5),
]
CODES = {
    "missing_receipt", "unsupported_schema", "missing_fingerprint", "missing_id",
    "missing_binding", "receipt_invalid", "fingerprint_mismatch", "receipt_id_mismatch",
    "capsule_binding_mismatch", "missing_capsule", "missing_gate", "malformed_gate",
    "required_check_missing", "required_check_failed", "claims_not_fully_verified",
    "unresolved_conflicts_exceed_limit", "unresolved_unknowns_exceed_limit",
    "receipt_missing_for_required_checks", "receipt_missing_for_claims_verification",
}


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for capsule in CAPSULES:
        for gate in GATES:
            cases.append({"gate": gate, "capsule": capsule})
            cases.extend({"gate": gate, "capsule": capsule, "receipt": r} for r in RECEIPTS[:3])
    cases.extend({"gate": GATE, "capsule": CAPSULE, "receipt": r} for r in RECEIPTS)
    return cases


def _drive(python: Path | str, cases: list[dict[str, Any]]) -> list[Any]:
    proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps(cases),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: list[Any] = json.loads(proc.stdout)
    return result


def test_verdicts_match_vivary_core(upstream: Callable[[str], Path]) -> None:
    cases = _cases()
    ours, theirs = side_by_side(lambda: _drive(sys.executable, cases),
                                lambda: _drive(upstream("ozone").parent / "python", cases))
    assert len(cases) >= 50
    for case, mine, suite in zip(cases, ours, theirs, strict=True):
        assert mine == suite, case
    seen = {code for pair in ours for verdict in pair for code in verdict["reason_codes"]}
    assert seen == CODES
    assert {"verified", "insufficient", "refused", "sufficient"} <= {v["outcome"] for p in ours for v in p}
