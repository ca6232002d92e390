"""What a person signs and how a signature is judged, in process: the payload bytes are
Stratum's (docs/guard.md), and each refusal says exactly what is missing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from strato.guard import authz, signers
from strato.guard.errors import GuardError
from tests.support.guard import Key, Workspace, make_key, ssh_sign
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


def _fingerprint(key: Key) -> str:
    return subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{key.path}.pub"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[1]


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
    listed = _fingerprint(key)
    assert signer == authz.Signer("alice@example.com", listed)
    assert signer.to_json() == {"principal": "alice@example.com", "fingerprint": listed}


def _judge(armor: str, line: str, at_s: int = 0, principal: str | None = None) -> authz.Signer:
    return authz.check_signature(
        armor, authz.NS_OVERRIDE, PAYLOAD, signers.parse(line), at_s, PAYLOAD.decode(), principal
    )


def test_a_reader_gets_back_the_recorded_principal_where_the_line_names_it(ws: Workspace, key: Key) -> None:
    armor = ssh_sign(key, authz.NS_OVERRIDE, PAYLOAD, ws.tmp)
    line = key.signers_line("alice@example.com,*@example.org")
    assert _judge(armor, line, principal="alice@example.com").principal == "alice@example.com"
    # the second pattern of the line, matched as `ssh-keygen -Y verify -I` matches it: the
    # recorded name, never the line's first principal or its pattern
    assert _judge(armor, line, principal="bob@example.org") == authz.Signer(
        "bob@example.org", _fingerprint(key)
    )


def test_a_key_not_trusted_or_not_for_the_recorded_principal_is_refused_by_name(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    armor = ssh_sign(key, authz.NS_OVERRIDE, PAYLOAD, ws.tmp)
    other = make_key(tmp_path, name="other")
    not_allowed = f"key {_fingerprint(key)} is not an allowed signer"
    with pytest.raises(GuardError) as info:
        _judge(armor, other.signers_line("alice@example.com"))
    assert info.value.message == not_allowed + HINT
    with pytest.raises(GuardError) as info:
        _judge(armor, key.signers_line("alice@example.com"), principal="mallory@example.com")
    assert info.value.message == f"{not_allowed} for 'mallory@example.com'" + HINT


def test_a_signers_window_is_judged_at_the_time_given(ws: Workspace, key: Key) -> None:
    armor = ssh_sign(key, authz.NS_OVERRIDE, PAYLOAD, ws.tmp)
    # valid from 2020-01-01 to 2021-01-01 (UTC): before, inside and after the window
    line = key.signers_line("alice@example.com", 'valid-after="20200101Z",valid-before="20210101Z"')
    inside = 1_600_000_000
    for principal in (None, "alice@example.com"):
        assert _judge(armor, line, inside, principal).principal == "alice@example.com"
        for outside in (1_500_000_000, 1_700_000_000):
            with pytest.raises(GuardError) as info:
                _judge(armor, line, outside, principal)
            assert info.value.error_type == "override_unavailable"
