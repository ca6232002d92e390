"""What a signed ledger entry claims, rebuilt so that anyone can check it later.

A deviation or a signed policy change stores its armored signature and the rationale
as signed; the payload itself is rebuilt from the entry and its ``prev_digest`` (the
ledger head it was signed against), so a verifier never trusts a stored payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strato.guard import authz, descriptors
from strato.guard import policy as policy_mod
from strato.guard.canonical import sha256_hex
from strato.guard.policy import Policy


@dataclass(frozen=True)
class Claim:
    namespace: str
    message: bytes
    armor: object
    rationale: str
    names_signer: bool  # the entry's rationale starts "authorized by <signer>: "

    def expected_rationale(self, signer: authz.Signer) -> str:
        return authorized_rationale(signer, self.rationale) if self.names_signer else self.rationale


def authorized_rationale(signer: authz.Signer, raw: str) -> str:
    return f"authorized by {signer.principal} ({signer.fingerprint}): {raw}"


def descriptor_rationale(descriptor: descriptors.Descriptor, file_sha: str) -> str:
    return f"descriptor {descriptor.id} (file sha256 {file_sha}): {descriptor.rationale}"


def target_policy(descriptor: descriptors.Descriptor, before: Policy) -> Policy:
    return policy_mod.parse({**descriptor.to_policy, "initial": before.initial})


def claim(entry: dict[str, Any], resource_id: str, before: Policy) -> Claim | None:
    """The signature an entry must carry, or None for entries that need none.

    Raises ``ValueError`` when the entry is shaped like a signed one but is not.
    """
    kind, by = entry["kind"], entry["resolved_by"]
    if kind != "deviation" and not (kind == "graph_version" and by == "human"):
        return None
    verdict = entry["verdict"] if isinstance(entry["verdict"], dict) else {}
    auth = verdict.get("authorization")
    if not isinstance(auth, dict):
        raise ValueError("unsigned: the entry carries no authorization")
    armor = auth.get("signature")
    if kind == "deviation":
        raw = str(auth.get("rationale", ""))
        payload = authz.override_payload(
            resource_id, entry["from_state"], entry["to_state"], raw, entry["prev_digest"]
        )
        return Claim(authz.NS_OVERRIDE, payload.encode(), armor, raw, True)
    if verdict.get("operation") == "migrate":
        raw = str(auth.get("rationale", ""))
        payload = authz.migrate_payload(
            resource_id, entry["payload_digest"], raw, entry["prev_digest"]
        )
        return Claim(authz.NS_MIGRATE, payload.encode(), armor, raw, True)
    if verdict.get("operation") == "apply_upgrade":
        text = auth.get("descriptor_file")
        if not isinstance(text, str):
            raise ValueError("apply_upgrade entry does not carry its descriptor file")
        data = text.encode("utf-8")
        found = descriptors.parse(data).get(str(auth.get("descriptor_id")))
        if found is None or found.from_checksum != before.checksum:
            raise ValueError("descriptor does not apply to the policy it changed")
        if target_policy(found, before).checksum != entry["payload_digest"]:
            raise ValueError("descriptor does not produce the policy the entry installed")
        return Claim(
            authz.NS_DESCRIPTORS, data, armor, descriptor_rationale(found, sha256_hex(data)), False
        )
    raise ValueError(f"signed policy change of unknown operation {verdict.get('operation')!r}")
