"""Signed authorizations: the payloads people sign and the check against a trust root.

Payloads are rebuilt here from the operation and the ledger head, never taken from the
caller, so a signature authorizes exactly one step at one point of one resource's
history. The trust root is ``.vivary/guard/allowed_signers`` as a given commit records
it: HEAD for a local operation, the review base in review.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strato.guard import signers as signers_mod
from strato.guard import sshsig
from strato.guard.canonical import canonical
from strato.guard.errors import GuardError
from tropo.git.snapshot import read_file
from tropo.git.types import Commit

SIGNERS_PATH = ".vivary/guard/allowed_signers"
NS_OVERRIDE = "stratum-guard-override"
NS_MIGRATE = "stratum-guard-migrate"
NS_DESCRIPTORS = "stratum-guard-descriptors"


def override_payload(
    resource_id: str, from_state: str, to_state: str, rationale: str, ledger_head: str
) -> str:
    return canonical(
        {
            "action": "override",
            "from_state": from_state,
            "ledger_head": ledger_head,
            "rationale": rationale,
            "resource_id": resource_id,
            "to_state": to_state,
        }
    )


def migrate_payload(
    resource_id: str, policy_checksum: str, rationale: str, ledger_head: str
) -> str:
    return canonical(
        {
            "action": "migrate",
            "ledger_head": ledger_head,
            "policy_checksum": policy_checksum,
            "rationale": rationale,
            "resource_id": resource_id,
        }
    )


def sign_command(namespace: str, payload_file: str, key: str = "<key>") -> str:
    return f"ssh-keygen -Y sign -f {key} -n {namespace} {payload_file}"


@dataclass(frozen=True)
class Signer:
    principal: str
    fingerprint: str

    def to_json(self) -> dict[str, Any]:
        return {"principal": self.principal, "fingerprint": self.fingerprint}


def trusted_signers(commit: Commit | None) -> list[signers_mod.AllowedSigner]:
    """The allowed signers ``commit`` records; unusable or empty roots refuse."""
    where = f"commit {str(commit.id)[:12]}" if commit is not None else "the repository (no commits)"
    data = read_file(commit, SIGNERS_PATH)
    if data is None:
        raise GuardError(
            "override_unavailable", f"no {SIGNERS_PATH} in {where}: nobody is trusted to sign"
        )
    try:
        found = signers_mod.parse(data.decode("utf-8"))
    except (UnicodeDecodeError, signers_mod.SignersError) as exc:
        raise GuardError("override_unavailable", f"{SIGNERS_PATH} in {where}: {exc}") from exc
    if not found:
        raise GuardError("override_unavailable", f"{SIGNERS_PATH} in {where} lists no signer")
    return found


def check_signature(
    armor: object,
    namespace: str,
    message: bytes,
    trusted: list[signers_mod.AllowedSigner],
    at_s: int,
    expected: str,
    principal: str | None = None,
) -> Signer:
    """Who signed ``message``; ``override_unavailable`` naming what was expected otherwise.
    A writer learns the principal here (the signer line's first); a reader checking a
    recorded entry passes the ``principal`` it names, which the line must name too: the
    entry's writer chose that field, so it is only a name the trust root gives this key."""
    hint = f"; sign exactly {expected!r} in namespace {namespace}"
    if not isinstance(armor, str) or not armor.strip():
        raise GuardError(
            "override_unavailable", "authorization (an SSH signature) is required" + hint
        )
    try:
        sig = sshsig.parse_armor(armor)
        if sig.namespace != namespace:
            raise sshsig.SignatureError(f"signature is for namespace {sig.namespace!r}")
        allowed = signers_mod.find(trusted, sig.key, namespace, at_s, principal)
        if allowed is None:
            whom = "" if principal is None else f" for {principal!r}"
            raise sshsig.SignatureError(f"key {sig.key.fingerprint} is not an allowed signer{whom}")
        sshsig.check(sig, namespace, message)
    except sshsig.SignatureError as exc:
        raise GuardError("override_unavailable", f"{exc}{hint}") from exc
    return Signer(allowed.principals[0] if principal is None else principal, sig.key.fingerprint)
