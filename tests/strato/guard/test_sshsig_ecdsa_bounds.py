"""ECDSA's r and s must each be at least 1, and 1 is allowed: the bound is exact.

A signature with r = s = 1 cannot be made with a key's private half, but it can be made
for a public key chosen to fit it (Q = R - z*G for a point R whose x is 1: P-521 has one,
P-256 and P-384 have none), and then it verifies in ``ssh-keygen -Y verify``. Refusing it
would disagree with OpenSSH; taking 0 would let cryptography decide what OpenSSH refuses
by rule.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from strato.guard import sshsig
from tests.support.guard import Key, keygen_verifies, ours_verifies

NAMESPACE = "stratum-guard-override"
MESSAGE = b'{"action":"override","ledger_head":"abc"}'
# NIST P-521 (SEC 2): field prime, b (a = -3) and the group order
P = 2**521 - 1
B = int(
    "0051953EB9618E1C9A1F929A21A0B68540EEA2DA725B99B315F3B8B489918EF1"
    "09E156193951EC7E937B1652C0BD3BB1BF073573DF883D2C34F1EF451FD46B503F00",
    16,
)
N = int(
    "01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFA"
    "51868783BF2F966B7FCC0148F709A5D03BB5C9B8899C47AEBB6FB71E91386409",
    16,
)


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _mpint(n: int) -> bytes:
    return _string(n.to_bytes(n.bit_length() // 8 + 1, "big") if n else b"")


def _point_with_x(x: int) -> tuple[int, int] | None:
    y2 = (x**3 - 3 * x + B) % P
    y = pow(y2, (P + 1) // 4, P)  # P = 3 (mod 4): the square root, if there is one
    return (x, y) if y * y % P == y2 else None


def _minus(r: tuple[int, int], q: tuple[int, int]) -> tuple[int, int]:
    """R - Q on the curve (affine; R and Q differ in x)."""
    (x1, y1), (x2, y2) = r, (q[0], -q[1] % P)
    slope = (y2 - y1) * pow(x2 - x1, -1, P) % P
    x3 = (slope * slope - x1 - x2) % P
    return x3, (slope * (x1 - x3) - y1) % P


def fitted_key() -> Key:
    """A P-521 key under which (r, s) = (1, 1) signs MESSAGE in NAMESPACE.

    With r = s = 1 verification computes R = z*G + Q and wants x(R) = 1 (mod N): take
    the point R with x = 1 and Q = R - z*G.
    """
    data = sshsig.signed_data(NAMESPACE, "sha512", MESSAGE)
    z = int.from_bytes(hashlib.sha512(data).digest(), "big") % N  # 512 bits: not truncated
    zg = ec.derive_private_key(z, ec.SECP521R1()).public_key().public_numbers()
    target = _point_with_x(1)
    assert target is not None
    qx, qy = _minus(target, (zg.x, zg.y))
    public = ec.EllipticCurvePublicNumbers(qx, qy, ec.SECP521R1()).public_key()
    line = public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return Key(Path("/nonexistent"), line.decode())


def armor(key: Key, sig_r: int, sig_s: int) -> str:
    blob = (
        b"SSHSIG"
        + struct.pack(">I", 1)
        + _string(base64.b64decode(key.public.split()[1]))
        + _string(NAMESPACE.encode())
        + _string(b"")
        + _string(b"sha512")
        + _string(_string(b"ecdsa-sha2-nistp521") + _string(_mpint(sig_r) + _mpint(sig_s)))
    )
    return f"{sshsig.BEGIN}\n{base64.b64encode(blob).decode()}\n{sshsig.END}\n"


def test_r_and_s_of_one_verify_like_ssh_keygen(tmp_path: Path) -> None:
    key = fitted_key()
    ones = armor(key, 1, 1)
    assert keygen_verifies(key, NAMESPACE, MESSAGE, ones, tmp_path)
    assert ours_verifies(key, NAMESPACE, MESSAGE, ones)
    assert not keygen_verifies(key, NAMESPACE, MESSAGE + b"!", ones, tmp_path)
    assert not ours_verifies(key, NAMESPACE, MESSAGE + b"!", ones)


@pytest.mark.parametrize(("sig_r", "sig_s"), [(0, 1), (1, 0), (0, 0)])
def test_an_r_or_s_of_zero_is_refused_by_rule_like_ssh_keygen(tmp_path: Path, sig_r: int, sig_s: int) -> None:
    key = fitted_key()
    zero = armor(key, sig_r, sig_s)
    assert not keygen_verifies(key, NAMESPACE, MESSAGE, zero, tmp_path)
    with pytest.raises(sshsig.SignatureError) as info:
        sshsig.check(sshsig.parse_armor(zero), NAMESPACE, MESSAGE)
    assert str(info.value) == "malformed ECDSA signature (r and s must be positive)"
