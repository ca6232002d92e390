"""Governed verification `vivary.ozone-verification-request/v0`: one capsule, perhaps the
receipt of the turn run against it, and a gate, checked together without writing anything.

The request is refused (`vivary.ozone-verification-refusal/v0`, every reason listed) unless
each part has its exact shape, binds to the others and is fresh at `verified_at`; otherwise
the answer carries the receipt verdict, the gate verdict and one outcome, `sufficient`,
`insufficient` or `refused`, in the vocabulary of Vivary's Ozone.

A workspace `graph` (`repair_context.py`) and `content` (`content_context.py`) are checked
as the suite checks them; a verified request with a graph carries repair proposals over it
(`repairs.py`), the capsule recompiled from the graph and any content it was compiled
with.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tropo.canonical import is_lossless
from tropo.governed import capsule as capsules
from tropo.governed import content_context, repair_context, repairs
from tropo.governed import gate as gates
from tropo.governed import receipt as receipts
from tropo.governed.bounds import depth_within, identifier, nonblank, scope_work_bounded, work_within
from tropo.governed.freshness import age_code, parse_instant, receipt_codes
from tropo.governed.paths import is_within_allowlist

REQUEST_SCHEMA = "vivary.ozone-verification-request/v0"
SCHEMA = "vivary.ozone-verification/v0"
REFUSAL_SCHEMA = "vivary.ozone-verification-refusal/v0"
FIELDS = frozenset({"schema", "workspace", "verified_at", "capsule", "receipt", "gate", "graph", "content"})
JSON = dict[str, Any]


def refusal(codes: list[str]) -> JSON:
    return {
        "schema": REFUSAL_SCHEMA,
        "outcome": "refused",
        "reason_codes": list(dict.fromkeys(codes)),
        "receipt_verdict": None,
        "gate_verdict": None,
        "repair_proposal": None,
    }


def narrated_paths(capsule: JSON) -> list[Any]:
    """Every path the capsule's records name (subjects, records, conflict sides)."""
    paths: list[Any] = []
    for field in ("claims", "conflicts", "unknowns", "omissions"):
        for entry in capsule.get(field, []):
            paths.append(entry.get("subject_path"))
            if entry.get("kind") != "content_lines_truncated":
                paths.append(entry.get("path"))
            sides = entry.get("sides")
            if isinstance(sides, list):
                paths.extend(side.get("path") for side in sides if isinstance(side, dict))
    return [path for path in paths if path is not None]


def _scope_valid(capsule: JSON) -> bool:
    task = capsule["task"]
    if "scope" not in task:
        return True
    scope = task["scope"]
    paths = narrated_paths(capsule)
    return scope_work_bounded(scope, paths) and all(
        nonblank(path) and any(is_within_allowlist(root, path) for root in scope) for path in paths
    )


def repair_safe(capsule: JSON) -> bool:
    """A shaped capsule a repair could key on: its scope holds every narrated path, its
    topology fingerprint and claim ids and facts are bounded identifiers, and no claim
    says the same thing twice. (The rest of a repair's needs the shape already implies.)"""
    if not (_scope_valid(capsule) and identifier(capsule["workspace"].get("repair_topology_fingerprint"))):
        return False
    said = [(claim["subject"], claim["fact"], claim["claim"]) for claim in capsule["claims"]]
    return len(set(said)) == len(said) and all(
        identifier(claim["id"]) and identifier(claim["fact"]) for claim in capsule["claims"]
    )


def _envelope_codes(request: JSON) -> list[str]:
    codes = [f"unknown_field:{field}" for field in sorted(set(request) - FIELDS)]
    if request.get("schema") != REQUEST_SCHEMA:
        codes.append("invalid_schema")
    workspace = request.get("workspace")
    if not (
        isinstance(workspace, dict)
        and set(workspace) == {"fingerprint"}
        and nonblank(workspace["fingerprint"])
    ):
        codes.append("invalid_workspace")
    if parse_instant(request.get("verified_at")) is None:
        codes.append("invalid_verified_at")
    return codes


class _CapsuleFindings(NamedTuple):
    codes: list[str]
    receipt_readable: bool
    repair_safe: bool


def _capsule_codes(capsule: Any, claimed_workspace: Any, with_graph: bool) -> _CapsuleFindings:
    """Why the capsule cannot be verified, whether a receipt may be read against it and
    whether a repair could key on it. A graph stands in for the checks that need one."""
    if not isinstance(capsule, dict):
        return _CapsuleFindings(["invalid_capsule"], False, False)
    unknown = sorted(set(capsule) - capsules.FIELDS)
    if unknown:
        return _CapsuleFindings([f"unknown_capsule_field:{field}" for field in unknown], False, False)
    if not capsules.is_capsule(capsule):
        return _CapsuleFindings(["invalid_capsule"], False, False)
    task = capsule["task"]
    scope = task.get("scope") or []
    codes = []
    if not scope_work_bounded(scope, narrated_paths(capsule)):
        codes.append("repair_work_unbounded")
        safe = False
    elif not (safe := repair_safe(capsule)):
        codes.append("invalid_repair_capsule")
    declared = task.get("required_checks", [])
    cwds = [check["cwd"] for check in declared]
    if len({claim["id"] for claim in capsule["claims"]}) != len(capsule["claims"]):
        codes.append("duplicate_claim_id")
    elif len(capsule["claims"]) > capsule["budget"]["max_claims"]:
        codes.append("capsule_claim_budget_exceeded")
    elif not capsules.is_intact(capsule):
        codes.append("capsule_fingerprint_mismatch")
    elif nonblank(claimed_workspace) and capsule["workspace"]["fingerprint"] != claimed_workspace:
        codes.append("workspace_mismatch")
    elif with_graph:
        return _CapsuleFindings(codes, safe, safe)
    elif not scope_work_bounded(scope, cwds):
        codes.append("repair_work_unbounded")
    elif not all(not scope or any(is_within_allowlist(root, cwd) for root in scope) for cwd in cwds if cwd):
        codes.append("invalid_capsule")
    elif any(o.get("kind") in _GRAPH_OMISSIONS for o in capsule["omissions"]):
        codes.append("graph_required_for_compiler_omissions")
    elif capsule["required_checks"] != declared:
        codes.append("graph_required_for_effective_checks")
    else:
        return _CapsuleFindings(codes, safe, safe)
    return _CapsuleFindings(codes, False, safe)


#: Omissions whose provenance only the workspace graph can disambiguate.
_GRAPH_OMISSIONS = frozenset({"filtered_out", "claims_over_budget", "collation_domain_excluded"})


def _observed_at(capsule: Any) -> Any:
    workspace = capsule.get("workspace") if isinstance(capsule, dict) else None
    return parse_instant(workspace.get("observed_at")) if isinstance(workspace, dict) else None


def _gate_codes(gate: Any) -> list[str]:
    if not isinstance(gate, dict) or not nonblank(gate.get("name")):
        return ["invalid_gate"]
    codes = [f"unknown_gate_field:{field}" for field in sorted(set(gate) - gates.FIELDS)]
    return codes if gates.well_formed(gate) else [*codes, "invalid_gate"]


def _claim_lists_agree(receipt: JSON) -> bool:
    lists = [receipt.get(f"claims_{name}") for name in ("in_scope", "verified", "unverified")]
    if not all(
        isinstance(values, list) and all(map(nonblank, values)) and len(set(values)) == len(values)
        for values in lists
    ):
        return False
    in_scope, verified, unverified = (list(values) for values in lists if isinstance(values, list))
    if set(verified) & set(unverified) or set(verified) | set(unverified) != set(in_scope):
        return False
    checks = receipt["checks"]
    passed = bool(checks) and all(check["outcome"] == "passed" for check in checks)
    return verified == (in_scope if passed else []) and unverified == ([] if passed else in_scope)


def _check_shape(check: Any) -> bool:
    return (
        isinstance(check, dict)
        and check.get("outcome") in receipts.OUTCOMES
        and nonblank(check.get("name"))
        and nonblank(check.get("command"))
        and ("detail" not in check or nonblank(check["detail"]))
    )


def _receipt_shape(receipt: Any, capsule: JSON) -> bool:
    """The receipt is complete, internally consistent and bound to exactly this capsule:
    its claims, conflicts and unknowns are the capsule's, verified only if all passed."""
    if not (
        isinstance(receipt, dict)
        and set(receipt) >= receipts.FIELDS
        and receipt.get("schema") == receipts.SCHEMA
        and nonblank(receipt.get("receipt_id"))
        and nonblank(receipt.get("fingerprint"))
    ):
        return False
    bound, workspace, runtime = receipt["capsule"], receipt["workspace"], receipt["runtime"]
    if not (
        isinstance(bound, dict)
        and set(bound) == {"id", "fingerprint"}
        and all(map(nonblank, bound.values()))
        and isinstance(workspace, dict)
        and set(workspace) == {"fingerprint", "observed_at"}
        and nonblank(workspace["fingerprint"])
        and parse_instant(workspace["observed_at"]) is not None
        and isinstance(runtime, dict)
        and nonblank(runtime.get("actor"))
        and all(field not in runtime or nonblank(runtime[field]) for field in ("harness", "model"))
        and isinstance(receipt["checks"], list)
        and all(map(_check_shape, receipt["checks"]))
        and _claim_lists_agree(receipt)
    ):
        return False
    conflicts, unknowns, provenance = (
        receipt["unresolved_conflicts"], receipt["unresolved_unknowns"], receipt["provenance"]
    )
    if not (
        isinstance(conflicts, list)
        and all(
            isinstance(c, dict) and set(c) == {"id", "decision"} and all(map(nonblank, c.values()))
            for c in conflicts
        )
        and len({c["id"] for c in conflicts}) == len(conflicts)
        and isinstance(unknowns, list)
        and all(isinstance(u, dict) for u in unknowns)
        and isinstance(provenance, list)
        and all(isinstance(p, dict) and all(nonblank(p.get(f)) for f in ("kind", "ref", "note"))
                for p in provenance)
    ):
        return False
    return (
        bound == {"id": capsule["capsule_id"], "fingerprint": capsule["fingerprint"]}
        and workspace["fingerprint"] == capsule["workspace"]["fingerprint"]
        and workspace["observed_at"] == capsule["workspace"].get("observed_at")
        and receipt["claims_in_scope"] == [claim["id"] for claim in capsule["claims"]]
        and conflicts == [{"id": c["id"], "decision": c["decision"]} for c in capsule["conflicts"]]
        and unknowns == capsule["unknowns"]
    )


def refusal_codes(request: Any) -> list[str]:
    """Every reason the request cannot be verified, in Ozone's order; `[]` when it can."""
    if not is_lossless(request):
        return ["invalid_json_value"]
    if not isinstance(request, dict):
        return ["unknown_request_shape"]
    codes = _envelope_codes(request)
    workspace = request.get("workspace")
    capsule = request.get("capsule")
    with_graph = "graph" in request
    claimed = workspace.get("fingerprint") if isinstance(workspace, dict) else None
    found = _capsule_codes(capsule, claimed, with_graph)
    codes.extend(found.codes)
    bound_to = capsule.get("workspace") if isinstance(capsule, dict) else None
    content_valid = True
    if isinstance(bound_to, dict):
        required = "content_fingerprint" in bound_to
        content_found = content_context.codes(request.get("content"), required)  # absent: None
        if required and not with_graph:
            content_found.append("graph_required_for_content_context")
        codes.extend(content_found)
        content_valid = not content_found
    observed, verified = _observed_at(capsule), parse_instant(request.get("verified_at"))
    if observed is None:
        codes.append("invalid_capsule_observed_at")
    codes.extend(age_code(observed, verified, "capsule_observed_after_verification", "stale_capsule"))
    codes.extend(_gate_codes(request.get("gate")))
    receipt = request.get("receipt")
    if isinstance(receipt, dict):
        codes.extend(f"unknown_receipt_field:{field}" for field in sorted(set(receipt) - receipts.FIELDS))
    if "receipt" in request and found.receipt_readable and isinstance(capsule, dict) and not (
        isinstance(receipt, dict)
        and _receipt_shape(receipt, capsule)
        and receipts.checks_authorized(receipt["checks"], capsule)
    ):
        codes.append("invalid_receipt")
    codes.extend(receipt_codes(receipt, observed, verified))
    if with_graph:
        codes.extend(repair_context.codes(request, found.repair_safe, content_valid))
    return codes


def verify(request: Any) -> JSON:
    """The verification of one governed request, or its refusal. Never raises."""
    if not work_within(request):
        return refusal(["request_work_unbounded"])
    if not depth_within(request):
        return refusal(["request_too_deeply_nested"])
    codes = refusal_codes(request)
    if codes:
        return refusal(codes)
    capsule, gate = request["capsule"], request["gate"]
    if "receipt" in request:
        receipt_verdict = receipts.receipt_verdict(request["receipt"], capsule)
        gate_verdict = gates.evaluate(gate, capsule, request["receipt"])
    else:
        receipt_verdict = receipts.receipt_verdict(None, capsule)
        gate_verdict = gates.evaluate(gate, capsule)
    if gate_verdict["outcome"] == "refused":
        outcome = "refused"
    elif receipt_verdict["outcome"] != "verified":
        outcome = "insufficient"
    else:
        outcome = gate_verdict["outcome"]
    return {
        "schema": SCHEMA,
        "workspace": request["workspace"],
        "verified_at": request["verified_at"],
        "outcome": outcome,
        "reason_codes": list(dict.fromkeys(receipt_verdict["reason_codes"] + gate_verdict["reason_codes"])),
        "receipt_verdict": receipt_verdict,
        "gate_verdict": gate_verdict,
        "repair_proposal": repairs.propose(capsule, request["graph"]) if "graph" in request else None,
    }
