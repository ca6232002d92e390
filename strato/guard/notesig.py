"""SSH signatures on notes commits (``gpgsig`` headers, namespace ``git``), checked
natively against a trust root: exactly what ``git verify-commit`` accepts with
``gpg.format = ssh`` and that root as ``gpg.ssh.allowedSignersFile``.

A base may require them (``require_signed_notes = true`` in its
``.vivary/guard/config.toml``), so every ledger append review accepts is attributable
to a key the base trusts, agents' keys included.
"""

from __future__ import annotations

from collections.abc import Callable

from strato.guard import sshsig
from strato.guard.errors import GuardError
from strato.guard.signers import AllowedSigner, find
from tropo.git import notes
from tropo.git.types import Commit, Repository

NAMESPACE = "git"


def signer_of(
    commit: Commit, trusted: list[AllowedSigner], at_s: int
) -> tuple[AllowedSigner | None, str | None]:
    """(the allowed signer, None) when ``commit`` is validly signed by a trusted key;
    (None, why) otherwise; (None, None) when it carries no signature."""
    signature, payload = commit.gpg_signature  # (None, None) unsigned, whatever the stubs say
    if not signature:
        return None, None
    try:
        sig = sshsig.parse_armor(signature.decode("ascii", "replace"))
        allowed = find(trusted, sig.key, NAMESPACE, at_s)
        if allowed is None:
            return None, f"key {sig.key.fingerprint} is not an allowed signer for namespace git"
        sshsig.check(sig, NAMESPACE, payload)
    except sshsig.SignatureError as exc:
        return None, str(exc)
    return allowed, None


def unsigned_breaks(
    repo: Repository,
    tip: str,
    stops: list[str],
    trusted: Callable[[], list[AllowedSigner]],
    at_s: int,
    required: bool,
) -> list[str]:
    """Why each notes commit after ``stops`` up to ``tip`` fails: a signature that does not
    verify against ``trusted`` always; no signature only when ``required``."""
    found = []
    for commit in notes.commits(repo, tip, hide=stops):
        has_sig = bool(commit.gpg_signature[0])
        if not has_sig and not required:
            continue
        try:
            signer, why = signer_of(commit, trusted(), at_s) if has_sig else (None, "unsigned")
        except GuardError as exc:  # no usable trust root: nobody can have signed it
            signer, why = None, exc.message
        if signer is None:
            found.append(f"notes commit {str(commit.id)[:12]} is not signed by a trusted key: {why}")
    return found
