"""The operations beside a transition's predicates: an override or a migrate on a
person's one-shot signature, an additive upgrade, a signed descriptor's upgrade.

Each decides inside :func:`strato.guard.append.commit`, against the ledger that write
extends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strato.guard import append, authz, config, descriptors, entries, predicates, store
from strato.guard import policy as policy_mod
from strato.guard import requests as rq
from strato.guard.canonical import payload_digest, sha256_hex
from strato.guard.errors import GuardError
from tropo.git import repo as gitrepo
from tropo.git.snapshot import read_file
from tropo.git.types import Commit, Repository


def override(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Move along a legal edge without its predicates, on a person's one-shot signature."""
    f = rq.fields(
        req,
        ("resource_id", "from_state", "to_state", "authorization", "rationale"),
        {"resolved_by": "human"},
    )
    if f["resolved_by"] != "human":
        raise GuardError("override_unavailable", "an override is resolved by a human")
    rid, raw = f["resource_id"], rq.rationale(f["rationale"])

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], append.Respond]:
        state = store.require(snap)
        src, dst = rq.check_move(state, f["from_state"], f["to_state"])
        payload = authz.override_payload(rid, src, dst, raw, state.head)
        signer, auth = rq.signed(repo, f["authorization"], authz.NS_OVERRIDE, payload)
        entry = {
            "from_state": src,
            "to_state": dst,
            "outcome": "deviation",
            "kind": "deviation",
            "resolved_by": "human",
            "idempotency_key": None,
            "payload_digest": payload_digest(src, dst, {}, [], "human", state.checksum),
            "rationale": entries.authorized_rationale(signer, raw),
            "verdict": {"authorization": {**auth, "rationale": raw}},
        }
        return entry, lambda sealed: rq.response(
            sealed, status="applied", current_state=dst, authorized_by=signer.principal
        )

    return append.commit(repo, rid, step)


def migrate(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the policy in any way, on a person's one-shot signature."""
    f = rq.fields(
        req, ("resource_id", *rq.POLICY_FIELDS, "authorization", "rationale"), rq.POLICY_DEFAULTS
    )
    rid, raw = f["resource_id"], rq.rationale(f["rationale"])
    cfg = config.load(gitrepo.head_commit(repo))

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], append.Respond]:
        state = store.require(snap)
        new = rq.new_policy(f, state, cfg)
        payload = authz.migrate_payload(rid, new.checksum, raw, state.head)
        signer, auth = rq.signed(repo, f["authorization"], authz.NS_MIGRATE, payload)
        entry = rq.policy_entry(
            state,
            new,
            "migrate",
            "human",
            entries.authorized_rationale(signer, raw),
            {**auth, "rationale": raw},
        )
        return entry, lambda sealed: {
            "status": "migrated",
            "checksum": new.checksum,
            "graph_version": state.graph_version + 1,
            "ledger_ref": sealed["entry_digest"],
            "rationale": raw,
            "authorized_by": signer.principal,
        }

    return append.commit(repo, rid, step)


def upgrade(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Extend the policy without a signature; anything but additive is refused."""
    f = rq.fields(req, ("resource_id", *rq.POLICY_FIELDS, "rationale"), rq.POLICY_DEFAULTS)
    rid, raw = f["resource_id"], rq.rationale(f["rationale"])
    cfg = config.load(gitrepo.head_commit(repo))

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], append.Respond]:
        state = store.require(snap)
        new = rq.new_policy(f, state, cfg)
        answer = {"checksum": new.checksum, "rationale": raw}
        if new.checksum == state.checksum:
            return {**answer, "status": "unchanged", "graph_version": state.graph_version}
        if why := policy_mod.additive_violation(state.policy, new):
            raise GuardError("incompatible_policy_upgrade", f"not an additive upgrade: {why}")
        entry = rq.policy_entry(state, new, "upgrade", "agent", raw)
        return entry, lambda sealed: {
            **answer,
            "status": "migrated",
            "graph_version": state.graph_version + 1,
            "ledger_ref": sealed["entry_digest"],
        }

    return append.commit(repo, rid, step)


def _verified_descriptors(
    repo: Repository, head: Commit | None
) -> tuple[bytes, authz.Signer, dict[str, Any]]:
    """The descriptor file ``head`` (HEAD, read once by the caller) records, its signer
    and the authorization, or ``upgrade_descriptor_unavailable`` saying why not."""
    data, armor = read_file(head, descriptors.PATH), read_file(head, descriptors.SIG_PATH)
    if data is None or armor is None:
        raise GuardError(
            "upgrade_descriptor_unavailable",
            f"HEAD has no {descriptors.PATH} with its signature {descriptors.SIG_PATH}",
        )
    try:
        signer, auth = rq.signed(
            repo, armor.decode("utf-8", "replace"), authz.NS_DESCRIPTORS, data.decode("utf-8")
        )
    except GuardError as exc:
        raise GuardError("upgrade_descriptor_unavailable", exc.message) from exc
    return data, signer, auth


def descriptors_view(repo: Repository) -> dict[str, Any]:
    """`strato guard descriptors`: the descriptors HEAD installs, the signers its trust
    root lists and whether the file verifies. Read-only: it grants nothing (applying one
    stays the MCP server's, whose environment a caller cannot point elsewhere)."""
    head = gitrepo.head_commit(repo)
    try:
        trusted = authz.trusted_signers(head)
        signers = [{"principals": list(s.principals), "fingerprint": s.key.fingerprint,
                    "namespaces": None if s.namespaces is None else list(s.namespaces)} for s in trusted]
        signers_error = None
    except GuardError as exc:
        signers, signers_error = [], exc.message
    out: dict[str, Any] = {"path": descriptors.PATH, "signature_path": descriptors.SIG_PATH,
                           "signers": signers, "signers_error": signers_error}
    data = read_file(head, descriptors.PATH)
    out["installed"] = data is not None
    try:
        found = descriptors.parse(data) if data is not None else {}
    except GuardError as exc:
        return {**out, "descriptors": [], "verified": False, "signer": None, "reason": exc.message}
    listed = [{"id": d.id, "rationale": d.rationale, "from_checksum": d.from_checksum,
               "to_policy": d.to_policy} for d in found.values()]
    try:
        _, signer, _ = _verified_descriptors(repo, head)
    except GuardError as exc:
        return {**out, "descriptors": listed, "verified": False, "signer": None, "reason": exc.message}
    return {**out, "descriptors": listed, "verified": True, "signer": signer.to_json(), "reason": None}


def apply_upgrade(repo: Repository, req: Mapping[str, Any]) -> dict[str, Any]:
    """Apply a signed upgrade descriptor committed at HEAD."""
    f = rq.fields(req, ("resource_id", "descriptor_id"), {})
    rid, ident = f["resource_id"], f["descriptor_id"]
    head = gitrepo.head_commit(repo)
    data, signer, auth = _verified_descriptors(repo, head)
    found = descriptors.parse(data).get(ident) if isinstance(ident, str) else None
    if found is None:
        raise GuardError(
            "upgrade_descriptor_unavailable", f"no descriptor {ident!r} in {descriptors.PATH}"
        )
    cfg = config.load(head)

    def step(snap: store.LedgerSnapshot) -> dict[str, Any] | tuple[dict[str, Any], append.Respond]:
        state = store.require(snap)
        new = entries.target_policy(found, state.policy)
        predicates.check_policy(new, cfg)
        answer = {"checksum": new.checksum, "descriptor_id": ident}
        if new.checksum == state.checksum:
            return {**answer, "status": "unchanged", "graph_version": state.graph_version}
        if state.checksum != found.from_checksum:
            raise GuardError(
                "upgrade_descriptor_mismatch",
                f"descriptor {ident} upgrades from {found.from_checksum[:12]}, "
                f"the policy is {state.checksum[:12]}",
            )
        if state.current_state not in new.nodes:
            raise GuardError(
                "invalid_policy", f"the current state {state.current_state!r} must stay a node"
            )
        rationale = entries.descriptor_rationale(found, sha256_hex(data))
        entry = rq.policy_entry(
            state,
            new,
            "apply_upgrade",
            "human",
            rationale,
            {**auth, "descriptor_id": ident, "descriptor_file": data.decode("utf-8")},
        )
        return entry, lambda sealed: {
            **answer,
            "status": "applied",
            "graph_version": state.graph_version + 1,
            "ledger_ref": sealed["entry_digest"],
            "authorized_by": signer.principal,
        }

    return append.commit(repo, rid, step)
