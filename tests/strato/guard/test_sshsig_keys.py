"""Public keys in the trust root are loaded strictly: wrong sizes, weak RSA, a curve that
is not the one the key type names, and junk bytes are refusals that say why."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from strato.guard import signers


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _mpint(n: int) -> bytes:
    return _string(n.to_bytes(n.bit_length() // 8 + 1, "big"))


def _line(key_type: str, *parts: bytes) -> str:
    blob = _string(key_type.encode()) + b"".join(parts)
    return f"alice {key_type} {base64.b64encode(blob).decode()}\n"


def _refusal(line: str) -> str:
    with pytest.raises(signers.SignersError) as info:
        signers.parse(line)
    return str(info.value)


def _point(curve: ec.EllipticCurve) -> bytes:
    key = ec.generate_private_key(curve).public_key()
    return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def test_an_ed25519_key_must_be_32_bytes() -> None:
    assert _refusal(_line("ssh-ed25519", _string(b"k" * 31))) == (
        "allowed_signers line 1: ed25519 key must be 32 bytes"
    )


def test_rsa_keys_under_1024_bits_are_refused_and_1024_is_enough() -> None:
    e = _mpint(65537)
    assert _refusal(_line("ssh-rsa", e, _mpint(2**1022 + 1))) == (
        "allowed_signers line 1: RSA keys under 1024 bits are refused"
    )
    (s,) = signers.parse(_line("ssh-rsa", e, _mpint(2**1023 + 1)))
    assert s.key.key_type == "ssh-rsa"


def test_an_ecdsa_key_must_be_on_the_curve_its_type_names() -> None:
    p384 = _point(ec.SECP384R1())
    assert _refusal(_line("ecdsa-sha2-nistp256", _string(b"nistp384"), _string(p384))) == (
        "allowed_signers line 1: ECDSA curve does not match the key type"
    )
    assert _refusal(_line("ecdsa-sha2-nistp256", _string(b"\xff\xfe"), _string(p384))) == (
        "allowed_signers line 1: ECDSA curve does not match the key type"
    )


def test_a_point_that_is_not_on_the_curve_is_a_malformed_key() -> None:
    bad = b"\x04" + b"\x01" * 64
    message = _refusal(_line("ecdsa-sha2-nistp256", _string(b"nistp256"), _string(bad)))
    assert message.startswith("allowed_signers line 1: malformed ecdsa-sha2-nistp256 key: ")
