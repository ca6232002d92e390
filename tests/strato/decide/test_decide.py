"""Every refusal code and every decision path of the Python API, pinned with requests
built here."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from strato.decide.decision import Decision, Refusal, decide
from tests.support import governed as b
from tests.support.decisions import MUTATIONS, set_at, stamp

Doc = dict[str, Any]


def _deep(depth: int) -> Doc:
    nested: Any = {}
    for _ in range(depth):
        nested = {"n": nested}
    return nested


def _sealed_evidence(doc: Doc, value: Any, key: Any = "x") -> Doc:
    """A capsule carrying `value` in a claim's evidence, id and fingerprint recomputed
    as a compiler would, so only the lossless-value rule can refuse it."""
    capsule = copy.deepcopy(doc["capsule"])
    capsule["claims"][0]["evidence"] = [{str(key): value}]
    capsule = b.seal(capsule)
    capsule["claims"][0]["evidence"] = [{key: value}]
    return {**doc, "capsule": capsule}


REFUSALS: list[tuple[str, Callable[[Doc], Any], list[str]]] = [
    ("not a mapping", lambda d: [d], ["unknown_request_shape"]),
    ("non-string key", lambda d: {**d, 1: "x"}, ["invalid_field_name"]),
    ("status text", MUTATIONS["status_text"], ["unknown_field:status"]),
    (
        "unknown fields sorted",
        MUTATIONS["two_unknown_fields"],
        ["unknown_field:approval", "unknown_field:zeta"],
    ),
    ("schema", MUTATIONS["schema_wrong"], ["invalid_schema"]),
    ("policy", MUTATIONS["policy_wrong"], ["invalid_policy_version"]),
    ("actor missing", MUTATIONS["no_actor"], ["invalid_actor"]),
    ("actor extra key", MUTATIONS["actor_extra_key"], ["invalid_actor"]),
    ("actor padded id", MUTATIONS["actor_padded_id"], ["unknown_actor_shape"]),
    ("actor control id", MUTATIONS["actor_control_id"], ["unknown_actor_shape"]),
    ("actor NFD id", MUTATIONS["actor_nfd_id"], ["unknown_actor_shape"]),
    ("actor id over 256 bytes", MUTATIONS["actor_long_id"], ["unknown_actor_shape"]),
    ("actor kind", MUTATIONS["actor_kind_robot"], ["unknown_actor_kind"]),
    ("authority class", MUTATIONS["authority_admin"], ["unknown_authority_class"]),
    ("worker as owner", MUTATIONS["worker_owner"], ["workers_cannot_own"]),
    ("agent as owner", MUTATIONS["agent_owner"], ["workers_cannot_own"]),
    ("workspace", MUTATIONS["workspace_extra"], ["invalid_workspace"]),
    ("workspace mismatch", MUTATIONS["workspace_other"], ["workspace_mismatch"]),
    ("scope relative", MUTATIONS["scope_relative"], ["invalid_scope"]),
    ("scope other root", MUTATIONS["scope_other_root"], ["scope_mismatch"]),
    ("scope child", MUTATIONS["scope_child"], ["scope_mismatch"]),
    ("requested_at without zone", MUTATIONS["requested_no_zone"], ["invalid_requested_at"]),
    ("decision_at missing", MUTATIONS["decision_missing"], ["invalid_decision_at"]),
    ("request from future", MUTATIONS["request_from_future"], ["request_from_future"]),
    ("stale request at 301 s", MUTATIONS["request_301"], ["stale_request", "stale_capsule"]),
    ("capsule shape", MUTATIONS["capsule_no_budget"], ["invalid_capsule"]),
    ("capsule forged id", MUTATIONS["capsule_forged_id"], ["capsule_fingerprint_mismatch"]),
    ("capsule edited", MUTATIONS["capsule_evidence_edit"], ["capsule_fingerprint_mismatch"]),
    ("NaN", lambda d: _sealed_evidence(d, float("nan")), ["capsule_fingerprint_mismatch"]),
    ("Infinity", lambda d: _sealed_evidence(d, float("inf")), ["capsule_fingerprint_mismatch"]),
    ("2^53", lambda d: _sealed_evidence(d, 2**53), ["capsule_fingerprint_mismatch"]),
    ("non-string capsule key", lambda d: _sealed_evidence(d, "x", key=1), ["capsule_fingerprint_mismatch"]),
    ("capsule claim rewritten", MUTATIONS["capsule_claim_edit"], ["invalid_capsule"]),
    ("scope with ..", MUTATIONS["scope_dotdot"], ["scope_mismatch"]),
    ("capsule budget 2^53", MUTATIONS["capsule_budget_2p53"], ["invalid_capsule"]),
    ("capsule path with ..", MUTATIONS["capsule_scope_dotdot"], ["invalid_capsule"]),
    (
        "capsule without scope",
        MUTATIONS["capsule_no_scope"],
        ["capsule_fingerprint_mismatch", "scope_mismatch"],
    ),
    (
        "observed_at",
        MUTATIONS["capsule_observed_null"],
        ["capsule_fingerprint_mismatch", "invalid_capsule_observed_at"],
    ),
    (
        "observed after request",
        MUTATIONS["capsule_after_request"],
        ["capsule_observed_after_request"],
    ),
    ("stale capsule", MUTATIONS["capsule_stale_301"], ["stale_capsule"]),
    ("verdict without receipt", MUTATIONS["verdict_alone"], ["verdict_requires_receipt"]),
    (
        "receipt created_at",
        lambda d: {**d, "receipt": {"created_at": "later"}},
        ["invalid_receipt_created_at"],
    ),
    (
        "receipt before capsule",
        lambda d: {**d, "receipt": {"created_at": stamp(-1)}},
        ["receipt_precedes_capsule"],
    ),
    (
        "receipt from future",
        lambda d: {**d, "receipt": {"created_at": stamp(91)}},
        ["receipt_from_future"],
    ),
    (
        "stale receipt",
        lambda d: {
            **d,
            "requested_at": stamp(250),
            "decision_at": stamp(301),
            "receipt": {"created_at": stamp(0)},
        },
        ["stale_capsule", "stale_receipt"],
    ),
    ("state bool", MUTATIONS["state_bool"], ["invalid_state"]),
    ("limits extra", MUTATIONS["limits_extra"], ["invalid_limits"]),
    (
        "too deep",
        set_at(("capsule", "claims", 0, "evidence"), [_deep(5000)]),
        ["request_too_deeply_nested"],
    ),
]


@pytest.mark.parametrize(
    ("mutate", "codes"), [(m, c) for _, m, c in REFUSALS], ids=[n for n, _, _ in REFUSALS]
)
def test_each_refusal_code(mutate: Callable[[Doc], Any], codes: list[str]) -> None:
    result = decide(mutate(b.request()))
    assert isinstance(result, Refusal)
    assert list(result.reason_codes) == codes
    assert result.exit_code() == 2 and result.exit_code(strict=True) == 2
    assert result.document() == {
        "schema": "vivary.strato-decision-refusal/v0",
        "policy_version": "vivary.strato-policy/v0",
        "decision": "blocked",
        "reason_codes": codes,
        "budget": None,
        "gate": None,
    }


def test_sealed_lossless_values_verify() -> None:
    assert isinstance(decide(_sealed_evidence(b.request(), 2**53 - 1)), Decision)


def test_errors_accumulate_in_upstream_order() -> None:
    doc = b.request(schema="x", policy_version="y", scope={"project": "p", "paths": ["rel"]})
    doc["state"] = {"turns_used": -1}
    result = decide({**doc, "zz": 1, "aa": 2})
    assert list(result.reason_codes) == [
        "unknown_field:aa",
        "unknown_field:zz",
        "invalid_schema",
        "invalid_policy_version",
        "invalid_scope",
        "invalid_state",
    ]


@pytest.mark.parametrize(
    "mutation",
    [
        "request_exactly_300",
        "capsule_exactly_300",
        "scope_trailing_slash",
        "scope_backslash",
        "requested_offset",
        "actor_256_id",
        "human_owner",
    ],
)
def test_boundaries_that_pass(mutation: str) -> None:
    assert isinstance(decide(MUTATIONS[mutation](b.request())), Decision)


def _decided(doc: Doc) -> Decision:
    result = decide(doc)
    assert isinstance(result, Decision), result
    return result


def test_act_echoes_the_request_identity() -> None:
    doc = b.request()
    result = _decided(doc)
    assert (result.decision, result.reason_codes) == ("act", ())
    assert result.document() == {
        "schema": "vivary.strato-decision/v0",
        "policy_version": doc["policy_version"],
        "actor": doc["actor"],
        "authority_class": doc["authority_class"],
        "workspace": doc["workspace"],
        "scope": doc["scope"],
        "requested_at": doc["requested_at"],
        "decision_at": doc["decision_at"],
        "decision": "act",
        "reason_codes": [],
        "budget": {"decision": "within_budget", "reason_codes": [], "details": {}},
        "gate": {"decision": "clear", "reason_codes": [], "gate_requests": []},
    }
    assert result.exit_code(strict=True) == 0


@pytest.mark.parametrize(
    ("capsule", "gate_codes", "requests"),
    [
        (
            b.with_conflict(b.capsule()),
            ["unresolved_conflict"],
            [{"reason_code": "unresolved_conflict", "target": "conflict_0001"}],
        ),
        (
            b.with_unknown(b.capsule()),
            ["unresolved_unknown"],
            [{"reason_code": "unresolved_unknown", "count": 1}],
        ),
        (
            b.capsule(max_claims=2),
            ["capsule_over_budget"],
            [{"reason_code": "capsule_over_budget", "omitted_count": 11}],
        ),
    ],
    ids=["conflict", "unknown", "over-budget"],
)
def test_capsule_gates_request_a_human(capsule: Doc, gate_codes: list[str], requests: list[Doc]) -> None:
    result = _decided(b.request(capsule))
    assert (result.decision, result.reason_codes) == ("request_gate", ("gate_required",))
    assert result.gate == {
        "decision": "gate_required",
        "reason_codes": gate_codes,
        "gate_requests": requests,
    }
    assert result.exit_code() == 0 and result.exit_code(strict=True) == 1


def test_claim_without_evidence_requests_a_gate() -> None:
    capsule = b.without_evidence(b.capsule())
    result = _decided(b.request(capsule))
    assert result.gate is not None
    assert result.gate["gate_requests"] == [
        {"reason_code": "claim_missing_evidence", "target": capsule["claims"][0]["id"]}
    ]


def test_exhausted_budget_stops_with_details() -> None:
    result = _decided(MUTATIONS["both_exhausted"](b.request()))
    assert (result.decision, result.reason_codes) == ("stop", ("budget_exhausted",))
    assert result.budget == {
        "decision": "budget_exhausted",
        "reason_codes": ["turn_budget_exceeded", "action_budget_exceeded"],
        "details": {"turns": {"used": 0, "max": 0}, "actions": {"used": 0, "max": 0}},
    }
    assert result.exit_code(strict=True) == 0


def test_clean_receipt_stops_and_keeps_budget_exhaustion() -> None:
    capsule = b.capsule()
    receipt = b.receipt(capsule)
    assert _decided(b.request(capsule, receipt=receipt)).reason_codes == ("all_checks_clear",)
    exhausted = b.request(capsule, receipt=receipt, state={"turns_used": 8})
    result = _decided(exhausted)
    assert (result.decision, result.reason_codes) == (
        "stop",
        ("all_checks_clear", "budget_exhausted"),
    )


@pytest.mark.parametrize(
    ("outcomes", "request_"),
    [
        (
            ("failed",),
            {"reason_code": "required_check_failed", "check": "tropo-check", "outcome": "failed"},
        ),
        ((), {"reason_code": "required_check_missing", "check": "tropo-check"}),
    ],
)
def test_receipt_without_passing_checks_requests_a_gate(outcomes: tuple[str, ...], request_: Doc) -> None:
    capsule = b.capsule()
    result = _decided(b.request(capsule, receipt=b.receipt(capsule, outcomes=outcomes)))
    assert result.decision == "request_gate"
    assert result.gate is not None and result.gate["gate_requests"] == [request_]


def test_receipt_for_another_capsule_requests_a_gate() -> None:
    capsule, other = b.capsule(), b.capsule(question="Which gate is open?")
    result = _decided(b.request(capsule, receipt=b.receipt(other)))
    assert result.gate is not None
    assert result.gate["reason_codes"] == ["receipt_capsule_mismatch"]


def test_tampered_receipt_blocks() -> None:
    capsule = b.capsule()
    receipt = b.receipt(capsule, outcomes=("failed",))
    receipt["checks"][0]["outcome"] = "passed"
    result = _decided(b.request(capsule, receipt=receipt))
    assert (result.decision, result.reason_codes) == ("blocked", ("blocked_by_gate",))
    assert result.gate == {
        "decision": "blocked",
        "reason_codes": ["unknown_receipt_shape"],
        "gate_requests": [],
    }
    assert result.exit_code() == 0 and result.exit_code(strict=True) == 1


def test_verdict_can_add_but_never_waive_evidence() -> None:
    capsule = b.capsule()
    passed, failed = b.receipt(capsule), b.receipt(capsule, outcomes=("failed",))
    clean = _decided(b.request(capsule, receipt=passed, verdict=b.verdict(capsule, passed)))
    assert clean.decision == "stop"
    waiver = _decided(b.request(capsule, receipt=failed, verdict=b.verdict(capsule, failed)))
    assert waiver.decision == "request_gate"
    forged = {**b.verdict(capsule, passed), "gate": "something-else"}
    result = _decided(b.request(capsule, receipt=passed, verdict=forged))
    assert result.gate is not None
    assert result.gate["reason_codes"] == ["verdict_integrity_mismatch"]
    unbound = b.verdict(capsule, b.receipt(capsule, actor="agent:other"))
    result = _decided(b.request(capsule, receipt=passed, verdict=unbound))
    assert result.gate is not None
    assert result.gate["reason_codes"] == ["verdict_binding_mismatch"]


def test_a_trusted_clock_binds_decision_at() -> None:
    doc = b.request()
    decided_at = b.T0 + timedelta(seconds=90)
    assert isinstance(decide(doc, now=decided_at), Decision)
    assert isinstance(decide(doc, now=decided_at + timedelta(seconds=300)), Decision)
    late = decide(doc, now=decided_at + timedelta(seconds=301))
    early = decide(doc, now=decided_at - timedelta(seconds=1))
    assert late.reason_codes == ("stale_decision",)
    assert early.reason_codes == ("decision_from_future",)


def test_decide_does_not_mutate_the_request() -> None:
    doc = b.request(receipt=b.receipt(b.capsule()))
    before = copy.deepcopy(doc)
    decide(doc)
    assert doc == before
