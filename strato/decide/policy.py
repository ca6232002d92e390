"""The next-loop policy: given a valid capsule, the caller's spend and limits, and
perhaps the receipt (and verdict) of the turn just run, say `act`, `request_gate`,
`stop` or `blocked`, with the budget and gate objects that explain it.

Pure: loop state is a value the caller passes in; nothing is stored.
"""

from __future__ import annotations

from typing import Any

from strato.decide.verdict import verdict_problem
from tropo.governed.capsule import is_capsule
from tropo.governed.receipt import SCHEMA as RECEIPT_SCHEMA
from tropo.governed.receipt import verify_receipt

JSON = dict[str, Any]
_DIMENSIONS = (
    ("turns", "turns_used", "max_turns", "turn_budget_exceeded"),
    ("actions", "actions_used", "max_actions", "action_budget_exceeded"),
)


def _gate(codes: list[str], requests: list[JSON], *, blocked: bool = False) -> JSON:
    unique: list[JSON] = []
    for request in requests:
        if request not in unique:
            unique.append(request)
    decision = "blocked" if blocked else ("gate_required" if codes else "clear")
    return {
        "decision": decision,
        "reason_codes": list(dict.fromkeys(codes)),
        "gate_requests": unique,
    }


def _finite_count(value: Any) -> bool:
    # Envelope validation already admits only non-negative ints here.
    return type(value) is int


def evaluate_budget(state: JSON, limits: JSON) -> JSON:
    """Whether one more turn and action fit; an omitted limit is unbounded."""
    codes: list[str] = []
    details: JSON = {}
    for name, used_key, max_key, code in _DIMENSIONS:
        if max_key not in limits:
            continue
        used = state.get(used_key)
        used = 0 if used is None else used
        ceiling = limits[max_key]
        if not (_finite_count(used) and _finite_count(ceiling)) or used >= ceiling:
            codes.append(code)
            details[name] = {
                "used": used if _finite_count(used) else None,
                "max": ceiling if _finite_count(ceiling) else None,
            }
    return {
        "decision": "budget_exhausted" if codes else "within_budget",
        "reason_codes": codes,
        "details": details,
    }


def capsule_gate(capsule: JSON) -> JSON:
    """What in the capsule itself needs a human before acting: unresolved conflicts
    and unknowns, claims without evidence, claims cut by the budget."""
    codes: list[str] = []
    requests: list[JSON] = []

    def need(code: str, **detail: Any) -> None:
        codes.append(code)
        requests.append({"reason_code": code, **detail})

    for conflict in capsule["conflicts"]:
        if conflict.get("decision") == "review_required":
            need("unresolved_conflict", target=conflict.get("id"))
    if capsule["unknowns"]:
        need("unresolved_unknown", count=len(capsule["unknowns"]))
    for claim in capsule["claims"]:
        evidence = claim.get("evidence")
        if not isinstance(evidence, list) or not evidence:
            need("claim_missing_evidence", target=claim.get("id"))
    for omission in capsule["omissions"]:
        if omission.get("kind") == "claims_over_budget":
            need("capsule_over_budget", omitted_count=omission.get("omitted_count"))
            break
    return _gate(codes, requests)


def _receipt_readable(receipt: Any) -> bool:
    return (
        isinstance(receipt, dict)
        and receipt.get("schema") == RECEIPT_SCHEMA
        and all(isinstance(receipt.get(key), str) and receipt[key] for key in ("receipt_id", "fingerprint"))
        and all(
            isinstance(receipt.get(key), list) and all(isinstance(item, dict) for item in receipt[key])
            for key in ("checks", "unresolved_conflicts", "unresolved_unknowns")
        )
        and isinstance(receipt.get("capsule"), dict)
        and all(
            isinstance(receipt["capsule"].get(key), str) and receipt["capsule"][key]
            for key in ("id", "fingerprint")
        )
        and all(
            isinstance(check.get(key), str) and check[key]
            for check in receipt["checks"]
            for key in ("name", "command", "outcome")
        )
        and not verify_receipt(receipt)
    )


def _verdict_reasons(verdict: JSON, need: Any) -> None:
    for failing in verdict.get("failing_checks") or []:
        if failing.get("actual") == "missing":
            need("required_check_missing", check=failing.get("name"))
        else:
            need("required_check_failed", check=failing.get("name"), outcome=failing.get("actual"))
    if verdict.get("outcome") != "sufficient":
        need(
            "verdict_insufficient",
            verdict_outcome=verdict.get("outcome"),
            verdict_reason_codes=verdict.get("reason_codes"),
        )


def receipt_gate(capsule: JSON, receipt: Any, verdict: Any) -> JSON:
    """Whether the turn's receipt clears the capsule's required checks; a verdict
    may only add evidence."""
    if not _receipt_readable(receipt):
        return _gate(["unknown_receipt_shape"], [], blocked=True)
    codes: list[str] = []
    requests: list[JSON] = []

    def need(code: str, **detail: Any) -> None:
        codes.append(code)
        requests.append({"reason_code": code, **detail})

    matches = (
        receipt["capsule"]["id"] == capsule["capsule_id"]
        and receipt["capsule"]["fingerprint"] == capsule["fingerprint"]
        and receipt["workspace"]["fingerprint"] == capsule["workspace"]["fingerprint"]
    )
    if not matches:
        need("receipt_capsule_mismatch")
    elif verify_receipt(receipt, capsule):
        return _gate(["unknown_receipt_shape"], [], blocked=True)

    for required in capsule["required_checks"]:
        ran = [
            check
            for check in receipt["checks"]
            if check["name"] == required["name"] and check["command"] == required["command"]
        ]
        for check in ran:
            if check["outcome"] != "passed":
                need("required_check_failed", check=required["name"], outcome=check["outcome"])
        if not ran:
            need("required_check_missing", check=required["name"])

    if verdict is not None:
        problem = verdict_problem(verdict, capsule, receipt)
        if problem is not None:
            need(problem)
        else:
            _verdict_reasons(verdict, need)

    if receipt["unresolved_conflicts"]:
        need("unresolved_conflict", count=len(receipt["unresolved_conflicts"]))
    if receipt["unresolved_unknowns"]:
        need("unresolved_unknown", count=len(receipt["unresolved_unknowns"]))
    return _gate(codes, requests)


def _merge(first: JSON, second: JSON) -> JSON:
    return _gate(
        [*first["reason_codes"], *second["reason_codes"]],
        [*first["gate_requests"], *second["gate_requests"]],
    )


_NO_RECEIPT: Any = object()


def next_step(
    capsule: JSON,
    *,
    state: JSON | None,
    limits: JSON | None,
    receipt: Any = _NO_RECEIPT,
    verdict: Any = None,
) -> JSON:
    """The loop decision. With a receipt the turn already ran, so the answer is
    `stop` or a gate; failed evidence is never hidden behind an exhausted budget."""
    if not is_capsule(capsule):
        return {
            "decision": "blocked",
            "reason_codes": ["unknown_capsule_shape"],
            "budget": None,
            "gate": _gate(["unknown_capsule_shape"], [], blocked=True),
        }
    from_capsule = capsule_gate(capsule)
    budget = evaluate_budget(state or {}, limits or {})
    exhausted = ["budget_exhausted"] if budget["reason_codes"] else []

    def outcome(decision: str, codes: list[str], gate: JSON) -> JSON:
        return {"decision": decision, "reason_codes": codes, "budget": budget, "gate": gate}

    if receipt is not _NO_RECEIPT:
        from_receipt = receipt_gate(capsule, receipt, verdict)
        if from_receipt["decision"] == "blocked":
            return outcome("blocked", ["blocked_by_gate", *exhausted], from_receipt)
        gate = _merge(from_receipt, from_capsule)
        if gate["decision"] == "gate_required":
            return outcome("request_gate", ["gate_required", *exhausted], gate)
        return outcome("stop", ["all_checks_clear", *exhausted], gate)
    if exhausted:
        return outcome("stop", exhausted, from_capsule)
    if from_capsule["decision"] == "gate_required":
        return outcome("request_gate", ["gate_required"], from_capsule)
    return outcome("act", [], from_capsule)
