"""sshsig verification against signatures made by the real ssh-keygen, and agreement
with ``ssh-keygen -Y verify`` on what is accepted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from strato.guard import sshsig
from tests.support.guard import Key, keygen_verifies, make_key, ours_verifies, ssh_sign

KINDS = ["ed25519", "ecdsa", "rsa"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("hashalg", ["sha256", "sha512"])
def test_real_signatures_verify_like_ssh_keygen(tmp_path: Path, kind: str, hashalg: str) -> None:
    key = make_key(tmp_path, kind)
    message = b'{"action":"override","ledger_head":"abc"}'
    armor = ssh_sign(key, "stratum-guard-override", message, tmp_path, hashalg)
    sig = sshsig.parse_armor(armor)
    assert sig.hash_alg == hashalg
    prefix = {"ed25519": "ssh-ed25519", "ecdsa": "ecdsa", "rsa": "ssh-rsa"}[kind]
    assert sig.key.key_type.startswith(prefix)
    cases = [
        ("stratum-guard-override", message, True),
        ("stratum-guard-override", message + b" ", False),  # another payload
        ("stratum-guard-migrate", message, False),  # another namespace
    ]
    for namespace, msg, expected in cases:
        assert ours_verifies(key, namespace, msg, armor) is expected, (namespace, msg)
        assert keygen_verifies(key, namespace, msg, armor, tmp_path) is expected, (namespace, msg)


def test_fingerprint_matches_ssh_keygen(tmp_path: Path, key: Key) -> None:
    shown = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(key.path) + ".pub"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[1]
    armor = ssh_sign(key, "n", b"m", tmp_path)
    assert sshsig.parse_armor(armor).key.fingerprint == shown


def test_other_key_is_not_allowed(tmp_path: Path, key: Key) -> None:
    other = make_key(tmp_path, "ed25519", "mallory")
    armor = ssh_sign(other, "ns", b"m", tmp_path)
    assert not ours_verifies(key, "ns", b"m", armor)
    assert not keygen_verifies(key, "ns", b"m", armor, tmp_path)


def test_malformed_armor_is_refused(tmp_path: Path, key: Key) -> None:
    armor = ssh_sign(key, "ns", b"m", tmp_path)
    lines = armor.strip().splitlines()
    truncated = "\n".join([*lines[:2], lines[-1]])  # body cut short
    no_end = "\n".join(lines[:-1])
    last = lines[-2]  # the signature bytes sit at the end of the blob
    flipped = armor.replace(last, last[:4] + ("A" if last[4] != "A" else "B") + last[5:])
    for bad in (truncated, no_end, "", "hello", armor.replace("SSH SIGNATURE", "PGP SIGNATURE")):
        with pytest.raises(sshsig.SignatureError):
            sshsig.parse_armor(bad)
    with pytest.raises(sshsig.SignatureError):
        sshsig.check(sshsig.parse_armor(flipped), "ns", b"m")
