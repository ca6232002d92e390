"""What a person signs and how a signature is judged, in process: the payload bytes are
Stratum's (docs/guard.md), and each refusal says exactly what is missing."""

from __future__ import annotations

import subprocess

import pytest

from strato.guard import authz, signers
from strato.guard.errors import GuardError
from tests.strato.guard.conftest import Key, Workspace, ssh_sign
from tropo.git import repo as gitrepo

PAYLOAD = b'{"action":"override"}'


def test_the_signed_payloads_are_stratums_bytes() -> None:
    assert authz.override_payload("r:1", "review", "released", "why", "abc") == (
        '{"action":"override","from_state":"review","ledger_head":"abc",'
        '"rationale":"why","resource_id":"r:1","to_state":"released"}'
    )
    assert authz.migrate_payload("r:1", "sum", "why", "abc") == (
        '{"action":"migrate","ledger_head":"abc","policy_checksum":"sum",'
        '"rationale":"why","resource_id":"r:1"}'
    )


def test_the_sign_command_names_the_namespace_and_the_file() -> None:
    assert authz.sign_command(authz.NS_MIGRATE, "ask.json") == (
        "ssh-keygen -Y sign -f <key> -n stratum-guard-migrate ask.json"
    )


def _refusal(ws: Workspace, with_commit: bool = True) -> GuardError:
    with pytest.raises(GuardError) as info:
        authz.trusted_signers(gitrepo.head_commit(ws.repo) if with_commit else None)
    assert info.value.error_type == "override_unavailable"
    return info.value


def test_a_missing_or_empty_trust_root_names_where_it_looked(ws: Workspace) -> None:
    head = str(ws.repo.head.target)[:12]
    assert _refusal(ws, with_commit=False).message == (
        "no .vivary/guard/allowed_signers in the repository (no commits): nobody is trusted to sign"
    )
    assert _refusal(ws).message == (
        f"no .vivary/guard/allowed_signers in commit {head}: nobody is trusted to sign"
    )
    ws.trust("# nobody yet\n\n")
    head = str(ws.repo.head.target)[:12]
    assert _refusal(ws).message == f".vivary/guard/allowed_signers in commit {head} lists no signer"


def _check(armor: object, key: Key, namespace: str = authz.NS_OVERRIDE) -> authz.Signer:
    trusted = signers.parse(key.signers_line("alice@example.com,bob@example.com"))
    return authz.check_signature(armor, namespace, PAYLOAD, trusted, 0, PAYLOAD.decode())


HINT = """; sign exactly '{"action":"override"}' in namespace stratum-guard-override"""


@pytest.mark.parametrize("armor", [None, 7, "", " \n"])
def test_a_missing_authorization_is_asked_for_not_parsed(key: Key, armor: object) -> None:
    with pytest.raises(GuardError) as info:
        _check(armor, key)
    assert info.value.error_type == "override_unavailable"
    assert info.value.message == "authorization (an SSH signature) is required" + HINT


def test_a_signature_for_another_namespace_is_refused_by_name(ws: Workspace, key: Key) -> None:
    armor = ssh_sign(key, authz.NS_MIGRATE, PAYLOAD, ws.tmp)
    with pytest.raises(GuardError) as info:
        _check(armor, key)
    assert info.value.message == "signature is for namespace 'stratum-guard-migrate'" + HINT


def test_the_signer_is_the_lines_first_principal_and_the_keys_fingerprint(ws: Workspace, key: Key) -> None:
    signer = _check(ssh_sign(key, authz.NS_OVERRIDE, PAYLOAD, ws.tmp), key)
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{key.path}.pub"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[1]
    assert signer == authz.Signer("alice@example.com", listed)
    assert signer.to_json() == {"principal": "alice@example.com", "fingerprint": listed}
