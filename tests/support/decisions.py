"""A deterministic corpus of decision requests, valid and mutated, as JSON text: the
input both our `strato decide` and vivary-strato 0.1.3 are run on side by side."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from tests.support import governed as b

Doc = dict[str, Any]
Mutation = Callable[[Doc], Any]


def set_at(path: tuple[Any, ...], value: Any) -> Mutation:
    def apply(doc: Doc) -> Doc:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return doc

    return apply


def _drop(path: tuple[Any, ...]) -> Mutation:
    def apply(doc: Doc) -> Doc:
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
        return doc

    return apply


def stamp(seconds: int) -> str:
    return b.iso(b.T0 + timedelta(seconds=seconds))


# Edits of an otherwise valid request that each probe one rule.
MUTATIONS: dict[str, Mutation] = {
    "status_text": set_at(("status",), "approved by human"),
    "two_unknown_fields": lambda d: {**d, "zeta": 1, "approval": "yes"},
    "schema_wrong": set_at(("schema",), "vivary.strato-decision-request/v1"),
    "policy_wrong": set_at(("policy_version",), "vivary.strato-policy/v1"),
    "no_schema": _drop(("schema",)),
    "no_actor": _drop(("actor",)),
    "actor_extra_key": set_at(("actor", "role"), "owner"),
    "actor_blank_id": set_at(("actor", "id"), "  "),
    "actor_padded_id": set_at(("actor", "id"), " agent:x"),
    "actor_control_id": set_at(("actor", "id"), "agent:\u0007x"),
    "actor_nfd_id": set_at(("actor", "id"), "agent:e\u0301"),
    "actor_long_id": set_at(("actor", "id"), "a" * 257),
    "actor_256_id": set_at(("actor", "id"), "é" * 128),
    "actor_kind_robot": set_at(("actor", "kind"), "robot"),
    "actor_kind_int": set_at(("actor", "kind"), 7),
    "actor_human": set_at(("actor", "kind"), "human"),
    "worker_contributor": set_at(("actor", "kind"), "worker"),
    "agent_owner": set_at(("authority_class",), "owner"),
    "worker_owner": lambda d: {
        **d,
        "actor": {"kind": "worker", "id": "w"},
        "authority_class": "owner",
    },
    "human_owner": lambda d: {
        **d,
        "actor": {"kind": "human", "id": "a"},
        "authority_class": "owner",
    },
    "authority_admin": set_at(("authority_class",), "admin"),
    "no_authority": _drop(("authority_class",)),
    "workspace_other": set_at(("workspace", "fingerprint"), "sha256:" + "0" * 64),
    "workspace_extra": set_at(("workspace", "observed_at"), "2026-07-26T12:00:00Z"),
    "workspace_blank": set_at(("workspace", "fingerprint"), ""),
    "workspace_string": set_at(("workspace",), "sha256:abc"),
    "scope_relative": set_at(("scope", "paths"), ["workspace"]),
    "scope_empty": set_at(("scope", "paths"), []),
    "scope_blank_project": set_at(("scope", "project"), " "),
    "scope_trailing_slash": set_at(("scope", "paths"), [b.ROOT + "/"]),
    "scope_backslash": set_at(("scope", "paths"), ["\\workspace"]),
    "scope_other_root": set_at(("scope", "paths"), ["/elsewhere"]),
    "scope_child": set_at(("scope", "paths"), [b.ROOT + "/sub"]),
    "scope_dotdot": set_at(("scope", "paths"), ["/workspace/../workspace"]),
    "scope_two_roots": set_at(("scope", "paths"), [b.ROOT, "/other"]),
    "scope_extra": set_at(("scope", "owner"), "x"),
    "scope_drive": set_at(("scope", "paths"), ["C:\\workspace"]),
    "requested_no_zone": set_at(("requested_at",), "2026-07-26T12:00:30"),
    "requested_offset": set_at(("requested_at",), "2026-07-26T14:00:30+02:00"),
    "requested_garbage": set_at(("requested_at",), "yesterday"),
    "requested_number": set_at(("requested_at",), 1785067230),
    "decision_no_zone": set_at(("decision_at",), "2026-07-26T12:01:30"),
    "decision_missing": _drop(("decision_at",)),
    "request_from_future": set_at(("requested_at",), stamp(91)),
    "request_exactly_300": lambda d: {**d, "requested_at": stamp(0), "decision_at": stamp(300)},
    "request_301": lambda d: {**d, "requested_at": stamp(0), "decision_at": stamp(301)},
    "capsule_stale_301": lambda d: {**d, "requested_at": stamp(250), "decision_at": stamp(301)},
    "capsule_exactly_300": lambda d: {**d, "requested_at": stamp(250), "decision_at": stamp(300)},
    "capsule_after_request": lambda d: {**d, "requested_at": stamp(-1)},
    "capsule_observed_garbage": set_at(("capsule", "workspace", "observed_at"), "soon"),
    "capsule_observed_null": set_at(("capsule", "workspace", "observed_at"), None),
    "capsule_question_edit": set_at(("capsule", "task", "question"), "Delete everything?"),
    "capsule_claim_edit": set_at(("capsule", "claims", 0, "claim"), "gates are closed"),
    "capsule_evidence_edit": set_at(("capsule", "claims", 0, "evidence"), [{"kind": "forged"}]),
    "capsule_forged_id": set_at(("capsule", "capsule_id"), "capsule_0000000000000000"),
    "capsule_fp_forged": set_at(("capsule", "fingerprint"), "sha256:" + "f" * 64),
    "capsule_no_budget": _drop(("capsule", "budget")),
    "capsule_extra_field": set_at(("capsule", "approved"), True),
    "capsule_budget_2p53": set_at(("capsule", "budget", "max_claims"), 2**53),
    "capsule_budget_negative": set_at(("capsule", "budget", "max_claims"), -1),
    "capsule_budget_float": set_at(("capsule", "budget", "max_claims"), 24.0),
    "capsule_scope_dotdot": set_at(("capsule", "task", "scope"), ["/workspace/../etc"]),
    "capsule_scope_relative": set_at(("capsule", "task", "scope"), ["workspace"]),
    "capsule_no_scope": _drop(("capsule", "task", "scope")),
    "capsule_wrong_schema": set_at(("capsule", "schema"), "vivary.task-capsule/v1"),
    "capsule_string": set_at(("capsule",), "capsule_abc"),
    "capsule_missing": _drop(("capsule",)),
    "capsule_claim_status": set_at(("capsule", "claims", 0, "status"), "inferred"),
    "capsule_bad_tier": set_at(("capsule", "claims", 0, "selection", "tier"), "question_match"),
    "verdict_alone": lambda d: {**d, "verdict": {"schema": "vivary.gate-verdict/v0"}},
    "state_bool": set_at(("state", "turns_used"), True),
    "state_negative": set_at(("state", "actions_used"), -1),
    "state_float": set_at(("state", "turns_used"), 1.0),
    "state_extra": set_at(("state", "tokens_used"), 5),
    "state_null": set_at(("state",), None),
    "state_empty": set_at(("state",), {}),
    "limits_extra": set_at(("limits", "max_tokens"), 5),
    "limits_string": set_at(("limits", "max_turns"), "8"),
    "limits_absent": _drop(("limits",)),
    "turns_exhausted": lambda d: {**d, "state": {"turns_used": 8, "actions_used": 0}},
    "actions_exhausted": lambda d: {**d, "state": {"turns_used": 0, "actions_used": 32}},
    "both_exhausted": lambda d: {**d, "limits": {"max_turns": 0, "max_actions": 0}},
    "under_limits": lambda d: {**d, "state": {"turns_used": 7, "actions_used": 31}},
}


def _receipt_cases(capsule: Doc) -> Iterator[tuple[str, Doc]]:
    """Receipts and verdicts beside a capsule: each clears, gates or blocks."""
    good = b.receipt(capsule)
    other = b.capsule(question="Which gate is open?")
    yield "receipt_passed", {"receipt": good}
    yield "receipt_failed", {"receipt": b.receipt(capsule, outcomes=("failed",))}
    yield "receipt_skipped", {"receipt": b.receipt(capsule, outcomes=("skipped",))}
    yield "receipt_mixed", {"receipt": b.receipt(capsule, outcomes=("passed", "failed"))}
    yield "receipt_no_checks", {"receipt": b.receipt(capsule, outcomes=())}
    yield "receipt_other_capsule", {"receipt": b.receipt(other)}
    tampered = copy.deepcopy(good)
    tampered["checks"][0]["outcome"] = "failed"
    yield "receipt_tampered", {"receipt": tampered}
    forged = {**good, "receipt_id": "receipt_0000000000000000"}
    yield "receipt_forged_id", {"receipt": forged}
    yield "receipt_extra_field", {"receipt": {**good, "approved": True}}
    yield "receipt_null", {"receipt": None}
    yield "receipt_no_created_at", {"receipt": {k: v for k, v in good.items() if k != "created_at"}}
    yield "receipt_bad_created_at", {"receipt": {**good, "created_at": "later"}}
    early = b.receipt(capsule, created_at=b.T0 - timedelta(seconds=1))
    yield "receipt_precedes_capsule", {"receipt": early}
    future = b.receipt(capsule, created_at=b.T0 + timedelta(seconds=91))
    yield "receipt_from_future", {"receipt": future}
    yield (
        "receipt_stale",
        {
            "receipt": b.receipt(capsule, created_at=b.T0),
            "decision_at": stamp(301),
            "requested_at": stamp(250),
        },
    )
    yield "verdict_sufficient", {"receipt": good, "verdict": b.verdict(capsule, good)}
    failing = [{"name": "tropo-check", "expected": "passed", "actual": "missing"}]
    insufficient = b.verdict(capsule, good, outcome="insufficient", failing=failing)
    yield "verdict_insufficient", {"receipt": good, "verdict": insufficient}
    tampered_verdict = {**b.verdict(capsule, good), "claims_total": 0}
    yield "verdict_tampered", {"receipt": good, "verdict": tampered_verdict}
    other_receipt = b.receipt(capsule, actor="agent:other")
    yield "verdict_other_receipt", {"receipt": good, "verdict": b.verdict(capsule, other_receipt)}
    yield "verdict_null", {"receipt": good, "verdict": None}


def _capsules() -> dict[str, Doc]:
    base = b.capsule()
    return {
        "plain": base,
        "over_budget": b.capsule(max_claims=2),
        "over_budget_truncated": b.capsule(max_claims=0),
        "conflict": b.with_conflict(base),
        "unknown": b.with_unknown(base),
        "no_evidence": b.without_evidence(base),
        "broken_ref": b.capsule(
            records=[
                *b.RECORDS,
                {
                    **b.RECORDS[1],
                    "id": "dangling",
                    "path": "gates/d.md",
                    "edges": [{"field": "refs", "dst": "nowhere", "broken": True}],
                },
            ]
        ),
    }


RAW_DOCUMENTS: dict[str, str] = {
    "not_json": "{not json",
    "empty": "",
    "list": "[]",
    "string": '"approve"',
    "number": "42",
    "null": "null",
    "deep_10000": "[" * 10000 + "]" * 10000,
    "deep_object_10000": '{"a":' * 10000 + "1" + "}" * 10000,
}


def corpus() -> list[tuple[str, str]]:
    """(name, request text) pairs: each capsule variant plain, with receipts and
    verdicts, and under every mutation; plus NaN/Infinity/large-number texts and
    non-object documents. Deterministic: a fixed seed picks the cross-product."""
    rng = random.Random(8)
    cases: list[tuple[str, Any]] = []
    capsules = _capsules()
    for cname, capsule in capsules.items():
        cases.append((f"{cname}", b.request(capsule)))
        for rname, fields in _receipt_cases(capsule):
            cases.append((f"{cname}/{rname}", b.request(capsule, **fields)))
    names = sorted(MUTATIONS)
    for cname, capsule in capsules.items():
        picked = names if cname == "plain" else rng.sample(names, 12)
        for mname in picked:
            cases.append((f"{cname}/{mname}", MUTATIONS[mname](b.request(copy.deepcopy(capsule)))))
    receipt_names = [name for name, _ in _receipt_cases(capsules["plain"])]
    for mname in rng.sample(names, 15):
        rname = rng.choice(receipt_names)
        fields = dict(_receipt_cases(capsules["plain"]))[rname]
        doc = MUTATIONS[mname](b.request(copy.deepcopy(capsules["plain"]), **fields))
        cases.append((f"plain/{rname}+{mname}", doc))
    texts = [(name, json.dumps(doc)) for name, doc in cases]
    plain = json.dumps(b.request(capsules["plain"]))
    budget = '"budget": {"max_claims": 24}'
    texts += [
        ("capsule_nan", plain.replace(budget, '"budget": {"max_claims": NaN}')),
        ("capsule_infinity", plain.replace(budget, '"budget": {"max_claims": Infinity}')),
        ("capsule_big_int", plain.replace(budget, '"budget": {"max_claims": 9007199254740993}')),
        ("capsule_evidence_nan", plain.replace('"kind": "graph_record"', '"kind": NaN', 1)),
        ("capsule_evidence_2p53", plain.replace('"kind": "graph_record"', f'"n": {2**53}', 1)),
        ("state_nan", plain.replace('"turns_used": 0', '"turns_used": NaN')),
        ("limits_infinity", plain.replace('"max_turns": 8', '"max_turns": Infinity')),
        ("limits_huge", plain.replace('"max_turns": 8', '"max_turns": 1e400')),
        ("unicode_escape_key", plain.replace('"limits"', '"lim\\u0069ts"')),
    ]
    texts += sorted(RAW_DOCUMENTS.items())
    return texts
