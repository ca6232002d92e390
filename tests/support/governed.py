"""Requests, capsules, receipts and verdicts built for tests: a valid baseline and
named ways to bend it. Every builder is deterministic."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from tropo.canonical import fingerprint
from tropo.governed.capsule import body, capsule_id, claim_id
from tropo.governed.capsule_graph import GRAPH_CHECK, compile_capsule
from tropo.governed.receipt import build_receipt

ROOT = "/workspace"
T0 = datetime(2026, 7, 26, 12, 0, tzinfo=UTC)
CHECK = {**GRAPH_CHECK, "cwd": ROOT}

RECORDS: list[dict[str, Any]] = [
    {
        "id": "loop-policy",
        "type": "decision",
        "path": "decisions/loop-policy.md",
        "title": "Loop policy",
        "fields": {"status": "accepted", "date": "2026-07-01"},
        "body": "We stop at gates.\n",
        "edges": [{"field": "refs", "dst": "gates", "broken": False}],
    },
    {
        "id": "gates",
        "type": "gate",
        "path": "gates/gates.md",
        "title": "Human gates",
        "fields": {"status": "open"},
        "body": "",
        "edges": [],
    },
    {
        "id": "next-step",
        "type": "change",
        "path": "changes/next-step.md",
        "title": "Next safe step",
        "fields": {"status": "active", "assignee": "agent:example"},
        "body": "",
        "edges": [{"field": "gates", "dst": "gates", "broken": False}],
    },
]


def iso(instant: datetime, z: bool = True) -> str:
    text = instant.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z") if z else text


def seal(capsule: dict[str, Any]) -> dict[str, Any]:
    """Recompute a hand-edited capsule's id and fingerprint, as a compiler would."""
    sealed = dict(capsule)
    sealed["capsule_id"] = capsule_id(sealed["task"], sealed["workspace"]["fingerprint"])
    sealed["fingerprint"] = fingerprint(body(sealed, "capsule_id", "fingerprint"))
    return sealed


def capsule(
    *,
    max_claims: int = 24,
    observed_at: datetime = T0,
    question: str = "What is the next safe loop step?",
    records: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return compile_capsule(
        RECORDS if records is None else records,
        question=question,
        root=ROOT,
        observed_at=observed_at,
        max_claims=max_claims,
    )


def with_conflict(base: dict[str, Any]) -> dict[str, Any]:
    edited = copy.deepcopy(base)
    side = {"path": ROOT, "head_revision": None, "head_ref": None, "last_fetch": None}
    edited["conflicts"] = [
        {
            "id": "conflict_0001",
            "kind": "divergent_checkouts",
            "repository": "repo:example",
            "question": "which checkout is current?",
            "sides": [
                {**side, "checkout": "checkout_a", "evidence": None},
                {**side, "checkout": "checkout_b", "evidence": [{"command": "git rev-parse"}]},
            ],
            "status": "unresolved",
            "reason_codes": ["head_revision_differs"],
            "decision": "review_required",
        }
    ]
    return seal(edited)


def with_unknown(base: dict[str, Any]) -> dict[str, Any]:
    edited = copy.deepcopy(base)
    edited["unknowns"] = [{"checkout": "gates", "path": ROOT + "/gates", "fact": "approver", "reason": None}]
    return seal(edited)


def without_evidence(base: dict[str, Any]) -> dict[str, Any]:
    edited = copy.deepcopy(base)
    edited["claims"][0]["evidence"] = []
    edited["claims"][0]["id"] = claim_id(edited["claims"][0])
    return seal(edited)


def receipt(
    capsule_doc: dict[str, Any],
    *,
    outcomes: tuple[str, ...] = ("passed",),
    created_at: datetime = T0 + timedelta(seconds=60),
    actor: str = "agent:example",
) -> dict[str, Any]:
    checks = [{**GRAPH_CHECK, "outcome": outcome} for outcome in outcomes]
    return build_receipt(
        capsule_doc,
        runtime={"harness": "test", "actor": actor},
        checks=checks,
        created_at=created_at,
        provenance=[{"kind": "run", "ref": "run-1"}],
    )


def verdict(
    capsule_doc: dict[str, Any],
    receipt_doc: dict[str, Any],
    *,
    outcome: str = "sufficient",
    failing: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    sufficient = outcome == "sufficient"
    content: dict[str, Any] = {
        "schema": "vivary.gate-verdict/v0",
        "gate": "human-gates",
        "outcome": outcome,
        "reason_codes": [] if sufficient else ["required_check_failed"],
        "failing_checks": failing or [],
        "unresolved_conflicts": 0,
        "unresolved_unknowns": 0,
        "claims_total": len(capsule_doc["claims"]),
        "receipt_outcome": "verified",
        "capsule": {"id": capsule_doc["capsule_id"], "fingerprint": capsule_doc["fingerprint"]},
        "receipt_id": receipt_doc["receipt_id"],
    }
    return {**content, "fingerprint": fingerprint(content)}


def request(capsule_doc: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """A valid contributor request one minute after the capsule was observed; keyword
    arguments replace fields, and a value of `...` removes one."""
    capsule_doc = capsule() if capsule_doc is None else capsule_doc
    doc: dict[str, Any] = {
        "schema": "vivary.strato-decision-request/v0",
        "policy_version": "vivary.strato-policy/v0",
        "actor": {"kind": "agent", "id": "agent:example"},
        "authority_class": "contributor",
        "workspace": {"fingerprint": capsule_doc["workspace"]["fingerprint"]},
        "scope": {"project": "example", "paths": [ROOT]},
        "requested_at": iso(T0 + timedelta(seconds=30)),
        "decision_at": iso(T0 + timedelta(seconds=90)),
        "state": {"turns_used": 0, "actions_used": 0},
        "limits": {"max_turns": 8, "max_actions": 32},
        "capsule": capsule_doc,
    }
    for name, value in fields.items():
        if value is ...:
            doc.pop(name, None)
        else:
            doc[name] = value
    return doc
