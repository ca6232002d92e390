"""Signed operations with keys and signatures from the real ssh-keygen: override,
migrate, apply-upgrade, and the attacks on them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from strato.guard import authz, descriptors, engine, signedops, store
from strato.guard.errors import GuardError
from tests.support.guard import POLICY, Key, Workspace, make_key, ssh_sign
from tests.support.repos import git

RID = "compose:FEAT-2"


@pytest.fixture
def trusted(ws: Workspace, key: Key) -> Key:
    """``key`` committed as an allowed signer and a registered resource at review."""
    ws.trust(key.signers_line("alice@example.com"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    req = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    assert engine.transition(ws.repo, req)["status"] == "applied"
    return key


def override_req(
    ws: Workspace,
    key: Key,
    rationale: str = "tests flaky, shipped by hand",
    namespace: str = authz.NS_OVERRIDE,
    to_state: str = "released",
    **payload_changes: str,
) -> dict[str, Any]:
    ask = {
        "kind": "override",
        "resource_id": RID,
        "from_state": "review",
        "to_state": to_state,
        "rationale": rationale,
    }
    payload, ns = engine.authorization_request(ws.repo, ask)
    assert ns == authz.NS_OVERRIDE
    if payload_changes:
        payload = json.dumps(
            {**json.loads(payload), **payload_changes}, sort_keys=True, separators=(",", ":")
        )
    sig = ssh_sign(key, namespace, payload.encode(), ws.tmp)
    return {
        "resource_id": RID,
        "from_state": "review",
        "to_state": to_state,
        "rationale": rationale,
        "authorization": sig,
    }


def refused(error_type: str, fn: Any, *args: Any) -> str:
    with pytest.raises(GuardError) as info:
        fn(*args)
    assert info.value.error_type == error_type, info.value.message
    return info.value.message


def test_transition_refused_then_signed_override_applies_once(ws: Workspace, trusted: Key) -> None:
    req = {"resource_id": RID, "from_state": "review", "to_state": "released"}
    assert engine.transition(ws.repo, req)["status"] == "refused"
    signed = override_req(ws, trusted)
    out = signedops.override(ws.repo, signed)
    assert out["status"] == "applied" and out["authorized_by"] == "alice@example.com"
    hist = engine.history(ws.repo, {"resource_id": RID})
    last = hist["ledger"][-1]
    assert hist["current_state"] == "released"
    assert last["outcome"] == "deviation" and last["resolved_by"] == "human"
    fingerprint = last["verdict"]["authorization"]["fingerprint"]
    expected = f"authorized by alice@example.com ({fingerprint}): tests flaky, shipped by hand"
    assert last["rationale"] == expected


def test_a_signature_works_once(ws: Workspace, trusted: Key) -> None:
    signed = override_req(ws, trusted, to_state="draft")
    assert signedops.override(ws.repo, signed)["current_state"] == "draft"
    req = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    assert engine.transition(ws.repo, req)["status"] == "applied"
    tip = git(ws.root, "rev-parse", store.REF).strip()
    # back at review, the same edge is legal again, but the ledger head moved on
    message = refused("override_unavailable", signedops.override, ws.repo, signed)
    assert "does not verify" in message
    assert git(ws.root, "rev-parse", store.REF).strip() == tip


def test_override_attacks_are_refused(ws: Workspace, trusted: Key) -> None:
    tip = git(ws.root, "rev-parse", store.REF).strip()
    mallory = make_key(ws.tmp, "ed25519", "mallory")
    good = override_req(ws, trusted)
    attacks = [
        override_req(ws, trusted, namespace=authz.NS_MIGRATE),  # another namespace
        override_req(ws, trusted, resource_id="compose:OTHER"),  # another resource
        override_req(ws, trusted, ledger_head="0" * 64),  # another point in history
        override_req(ws, mallory),  # a key nobody allowed
        {**good, "rationale": "something else"},  # signed rationale differs
        {**good, "authorization": "\n".join(good["authorization"].splitlines()[:3])},  # truncated
        {**good, "authorization": ""},
    ]
    for req in attacks:
        message = refused("override_unavailable", signedops.override, ws.repo, req)
        assert "sign exactly" in message  # the expected payload is echoed back
    refused("override_unavailable", signedops.override, ws.repo, {**good, "resolved_by": "agent"})
    assert git(ws.root, "rev-parse", store.REF).strip() == tip


def test_signers_only_in_the_working_tree_grant_nothing(ws: Workspace, key: Key) -> None:
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})
    signers = ws.root / authz.SIGNERS_PATH
    signers.parent.mkdir(parents=True)
    signers.write_text(key.signers_line("alice"))  # written, never committed
    message = refused("override_unavailable", signedops.override, ws.repo, override_req(ws, key))
    assert "no .vivary/guard/allowed_signers in commit" in message


def test_unsupported_signers_option_refuses_with_the_line(ws: Workspace, key: Key) -> None:
    ws.trust("# ops\n", key.signers_line("alice", "cert-authority"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})
    message = refused("override_unavailable", signedops.override, ws.repo, override_req(ws, key))
    assert "line 2: cert-authority is not supported" in message


def test_namespace_restricted_signer(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("alice", 'namespaces="stratum-guard-migrate"'))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    (ws.root / "NOTES.md").write_text("n\n")
    engine.transition(ws.repo, {"resource_id": RID, "from_state": "draft", "to_state": "review"})
    message = refused("override_unavailable", signedops.override, ws.repo, override_req(ws, key))
    assert "not an allowed signer" in message


def migrate_req(ws: Workspace, key: Key, graph: dict[str, list[str]]) -> dict[str, Any]:
    body = {
        "resource_id": RID,
        "new_graph": graph,
        "new_terminal": ["released"],
        "rationale": "drop review",
    }
    payload, ns = engine.authorization_request(ws.repo, {"kind": "migrate", **body})
    return {**body, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)}


@pytest.mark.parametrize("kind", ["ed25519", "ecdsa", "rsa"])
def test_signed_migrate(ws: Workspace, kind: str) -> None:
    key = make_key(ws.tmp, kind, "ops")
    ws.trust(key.signers_line("ops@example.com"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    graph = {"draft": ["released"]}
    out = signedops.migrate(ws.repo, migrate_req(ws, key, graph))
    assert out["status"] == "migrated" and out["graph_version"] == 2
    assert out["authorized_by"] == "ops@example.com"
    # the new policy governs: the edge that did not exist before is now legal (no predicates)
    req = {"resource_id": RID, "from_state": "draft", "to_state": "released"}
    assert engine.transition(ws.repo, req)["status"] == "applied"
    # a signature for one policy does not authorize another
    signed = migrate_req(ws, key, {"draft": ["released"], "released": []})
    refused(
        "override_unavailable", signedops.migrate, ws.repo, {**signed, "new_graph": {"released": []}}
    )


def commit_descriptors(ws: Workspace, key: Key, items: list[dict[str, Any]]) -> None:
    data = json.dumps({"version": 1, "descriptors": items}, indent=2)
    sig = ssh_sign(key, authz.NS_DESCRIPTORS, data.encode(), ws.tmp)
    ws.commit({descriptors.PATH: data, descriptors.SIG_PATH: sig}, "install descriptors")


def test_apply_upgrade_from_a_signed_descriptor(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("ops"))
    first = engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    to_policy = {
        "graph": {"draft": ["released"]},
        "edge_predicates": {},
        "terminal": ["released"],
        "stakes": {},
    }
    commit_descriptors(
        ws,
        key,
        [
            {
                "id": "shortcut",
                "rationale": "no review step",
                "from_checksum": first["checksum"],
                "to_policy": to_policy,
            }
        ],
    )
    req = {"resource_id": RID, "descriptor_id": "shortcut"}
    out = signedops.apply_upgrade(ws.repo, req)
    assert out["status"] == "applied" and out["graph_version"] == 2
    assert signedops.apply_upgrade(ws.repo, req)["status"] == "unchanged"
    last = engine.history(ws.repo, {"resource_id": RID})["ledger"][-1]
    assert last["rationale"].startswith("descriptor shortcut (file sha256 ")
    refused(
        "upgrade_descriptor_unavailable",
        signedops.apply_upgrade,
        ws.repo,
        {"resource_id": RID, "descriptor_id": "missing"},
    )


def test_apply_upgrade_refuses_mismatch_and_bad_signatures(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("ops"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    to_policy = {"graph": {"draft": []}, "edge_predicates": {}, "terminal": [], "stakes": {}}
    commit_descriptors(
        ws, key, [{"id": "d", "rationale": "r", "from_checksum": "a" * 64, "to_policy": to_policy}]
    )
    req = {"resource_id": RID, "descriptor_id": "d"}
    refused("upgrade_descriptor_mismatch", signedops.apply_upgrade, ws.repo, req)
    # a file edited after signing no longer verifies
    path = ws.root / descriptors.PATH
    ws.commit({descriptors.PATH: path.read_text().replace('"r"', '"edited"')})
    refused("upgrade_descriptor_unavailable", signedops.apply_upgrade, ws.repo, req)


def test_authorize_payload_is_the_reference_shape(ws: Workspace, trusted: Key) -> None:
    payload, ns = engine.authorization_request(
        ws.repo,
        {
            "kind": "override",
            "resource_id": RID,
            "from_state": "review",
            "to_state": "released",
            "rationale": "why",
        },
    )
    head = engine.history(ws.repo, {"resource_id": RID})["ledger"][-1]["entry_digest"]
    assert ns == "stratum-guard-override"
    assert payload == (
        '{"action":"override","from_state":"review","ledger_head":"' + head + '",'
        '"rationale":"why","resource_id":"' + RID + '","to_state":"released"}'
    )


def test_signature_file_path_is_not_an_input(ws: Workspace, tmp_path: Path) -> None:
    # apply-upgrade takes only resource_id and descriptor_id: no path to point elsewhere
    refused(
        "invalid_request",
        signedops.apply_upgrade,
        ws.repo,
        {"resource_id": RID, "descriptor_id": "d", "path": str(tmp_path)},
    )
