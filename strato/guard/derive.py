"""Re-derive a ledger entry from the state before it: nothing a writer chose is taken
as given when it could be recomputed.

Pure, except for the optional ``tree`` (the commit under review) that deterministic file
predicates are re-checked against. Each check raises ``ValueError`` with the reason.
What cannot be recomputed is named in docs/guard.md: a transition's ``payload_digest``
covers request inputs the entry does not record (artifacts, modified files), and
``command_exit_zero`` / judged predicates are taken from the record.
"""

from __future__ import annotations

import re
from typing import Any

from strato.guard import authz, predicates
from strato.guard.canonical import payload_digest
from strato.guard.errors import GuardError
from strato.guard.ledger import State
from strato.guard.policy import Predicate
from tropo.git.types import Blob, Commit

HEX64 = re.compile(r"[0-9a-f]{64}")
# who may resolve each kind of step; only a signature makes a human outcome
_RESOLVERS = {
    "transition": "agent",
    "deviation": "human",
    "upgrade": "agent",
    "migrate": "human",
    "apply_upgrade": "human",
}
_AUTH_KEYS = {
    "deviation": {"namespace", "signature", "principal", "fingerprint", "rationale"},
    "migrate": {"namespace", "signature", "principal", "fingerprint", "rationale"},
    "apply_upgrade": {
        "namespace",
        "signature",
        "principal",
        "fingerprint",
        "descriptor_id",
        "descriptor_file",
    },
}
_NAMESPACES = {
    "deviation": authz.NS_OVERRIDE,
    "migrate": authz.NS_MIGRATE,
    "apply_upgrade": authz.NS_DESCRIPTORS,
}
_VERDICT_KEYS = set(predicates.verdict([], "default", 0))


def check_register(entry: dict[str, Any]) -> None:
    """The register line (its policy is checked by the fold) carries nothing else."""
    verdict = entry["verdict"]
    if entry["resolved_by"] != "agent":
        raise ValueError("the register line is resolved by 'agent'")
    if entry["from_state"] is not None or entry["rationale"] is not None:
        raise ValueError("the register line has no from_state and no rationale")
    if entry["idempotency_key"] is not None:
        raise ValueError("the register line carries no idempotency_key")
    if not isinstance(verdict, dict) or set(verdict) != {
        "resource_id",
        "policy",
        "checksum",
        "graph_version",
    }:
        raise ValueError("the register line carries exactly its resource and policy")
    if entry["payload_digest"] != verdict["checksum"]:
        raise ValueError("the register line's payload_digest is not its policy checksum")


def check(entry: dict[str, Any], state: State, tree: Commit | None = None) -> None:
    """Refuse an entry whose fields are not exactly what its kind and inputs imply."""
    ts = entry["ts_ms"]
    if ts < 0:
        raise ValueError("ts_ms is negative")
    kind, src, dst = entry["kind"], entry["from_state"], entry["to_state"]
    if kind in ("transition", "deviation") and not state.policy.has_edge(src, dst):
        raise ValueError(f"edge {src}->{dst} is not in the policy")
    if kind == "transition":
        _transition(entry, state, tree)
    elif kind == "deviation":
        _authorized(entry, "deviation")
        if entry["idempotency_key"] is not None:
            raise ValueError("a deviation carries no idempotency_key")
        if entry["payload_digest"] != payload_digest(src, dst, {}, [], "human", state.checksum):
            raise ValueError("payload_digest is not the digest of this deviation")
    elif kind == "graph_version":
        _policy_change(entry)
    else:
        raise ValueError(f"entry kind {kind!r} cannot follow the register line")


def _resolver(entry: dict[str, Any], operation: str) -> None:
    want = _RESOLVERS[operation]
    if entry["resolved_by"] != want:
        raise ValueError(f"resolved_by {entry['resolved_by']!r}: a {operation} is resolved by {want!r}")


def _authorized(entry: dict[str, Any], operation: str) -> None:
    _resolver(entry, operation)
    verdict = entry["verdict"]
    auth = verdict.get("authorization") if isinstance(verdict, dict) else None
    if not isinstance(auth, dict):
        raise ValueError("unsigned: the entry carries no authorization")
    if set(auth) != _AUTH_KEYS[operation]:
        raise ValueError(f"a {operation} must carry exactly its signed authorization")
    if auth["namespace"] != _NAMESPACES[operation]:
        raise ValueError(f"authorization namespace {auth['namespace']!r} is not {operation}'s")
    if operation == "deviation" and set(verdict) != {"authorization"}:
        raise ValueError("a deviation's verdict holds only its authorization")


def _policy_change(entry: dict[str, Any]) -> None:
    verdict = entry["verdict"]
    operation = verdict.get("operation") if isinstance(verdict, dict) else None
    if operation not in ("upgrade", "migrate", "apply_upgrade"):
        raise ValueError(f"policy change of unknown operation {operation!r}")
    assert isinstance(verdict, dict)
    keys = {"operation", "policy", "checksum", "graph_version"}
    if operation == "upgrade":
        _resolver(entry, operation)
        if set(verdict) != keys:
            raise ValueError("an upgrade carries exactly operation, policy, checksum, graph_version")
    else:
        _authorized(entry, operation)
        if set(verdict) != keys | {"authorization"}:
            raise ValueError(f"a {operation} carries exactly its policy and authorization")
    if entry["idempotency_key"] is not None or not isinstance(entry["rationale"], str):
        raise ValueError("a policy change carries a rationale and no idempotency_key")


def _transition(entry: dict[str, Any], state: State, tree: Commit | None) -> None:
    _resolver(entry, "transition")
    if entry["rationale"] is not None:
        raise ValueError("a transition carries no rationale")
    if not HEX64.fullmatch(entry["payload_digest"]):
        raise ValueError("payload_digest is not a sha256")
    verdict = entry["verdict"]
    if not isinstance(verdict, dict) or set(verdict) != _VERDICT_KEYS:
        raise ValueError("the verdict is not one the guard writes")
    preds = state.policy.predicates(entry["from_state"], entry["to_state"])
    recorded = verdict["predicates"]
    evidence = verdict["meta"].get("guard_evidence") if isinstance(verdict["meta"], dict) else None
    if (
        not isinstance(recorded, list)
        or not isinstance(evidence, list)
        or len(recorded) != len(preds)
        or len(evidence) != len(preds)
    ):
        raise ValueError("the verdict does not record every predicate of the edge")
    met_all = True
    for pred, rec, ev in zip(preds, recorded, evidence, strict=True):
        met = _recorded_met(pred, rec, ev)
        met_all = met_all and met
        if met and tree is not None:
            _recheck(pred, tree)
    if verdict["stakes"] != state.policy.stake(entry["from_state"], entry["to_state"]):
        raise ValueError("the verdict's stakes are not the edge's")
    if verdict["met"] is not met_all or verdict["clean"] is not met_all:
        raise ValueError("the verdict's met does not follow from its predicates")
    if entry["outcome"] != ("applied" if met_all else "refused"):
        raise ValueError(f"outcome {entry['outcome']!r} does not follow from the verdict")


def _recorded_met(pred: Predicate, rec: object, ev: object) -> bool:
    if not isinstance(rec, dict) or not isinstance(ev, dict):
        raise ValueError("a predicate record is not an object")
    for field, want in (("id", pred.id), ("type", pred.type), ("statement", pred.statement)):
        if rec.get(field) != want:
            raise ValueError(f"the verdict records another predicate than {pred.id or pred.statement!r}")
    if ev.get("id") != pred.id or ev.get("statement") != pred.statement:
        raise ValueError(f"the evidence is for another predicate than {pred.id or pred.statement!r}")
    met = ev.get("met")
    if not isinstance(met, bool) or rec.get("verdict") != ("met" if met else "not_met"):
        raise ValueError(f"predicate {pred.id or pred.statement!r} is recorded inconsistently")
    if met and not (isinstance(ev.get("evidence"), str) and ev["evidence"]):
        raise ValueError(f"predicate {pred.id or pred.statement!r} is met without evidence")
    return met


def _recheck(pred: Predicate, tree: Commit) -> None:
    """A deterministic file predicate recorded as met must hold in the reviewed tree."""
    if not pred.trusted:
        return
    try:
        call = predicates.parse_call(pred.statement)
    except GuardError:  # the policy was validated when installed
        return
    if call.name == "server_file_exists":
        path = str(call.args[0])
        try:
            found = isinstance(tree.tree[path], Blob)
        except (KeyError, ValueError):
            found = False
        if not found:
            raise ValueError(
                f"predicate {pred.id or pred.statement!r} is recorded as met "
                f"but {path} is not in the reviewed commit {str(tree.id)[:12]}"
            )
