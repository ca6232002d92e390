"""A signature labelled with another algorithm than its key's is refused, as
``ssh-keygen -Y verify`` refuses it, even when the signature bytes themselves are valid."""

from __future__ import annotations

import base64
import struct
import textwrap
from pathlib import Path

import pytest

from strato.guard import sshsig
from tests.strato.guard.conftest import make_key, ssh_sign
from tests.strato.guard.test_sshsig import keygen_verifies, ours_verifies

NAMESPACE = "stratum-guard-override"
MESSAGE = b"payload"


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def relabel(armor: str, sig_type: str, extra: bytes = b"") -> str:
    """The same sshsig with its inner signature's algorithm name replaced (and ``extra``
    bytes appended to the signature)."""
    body = "".join(armor.strip().splitlines()[1:-1])
    blob = base64.b64decode(body)
    head, rest = blob[:10], blob[10:]  # "SSHSIG" and the version
    fields = []
    for _ in range(5):  # key, namespace, reserved, hash, signature
        (n,) = struct.unpack(">I", rest[:4])
        fields.append(rest[4 : 4 + n])
        rest = rest[4 + n :]
    assert rest == b""
    inner = fields.pop()
    (n,) = struct.unpack(">I", inner[:4])
    sig = inner[8 + n :] + extra  # skip the old name and the signature's own length
    rebuilt = head + b"".join(map(_string, fields)) + _string(_string(sig_type.encode()) + _string(sig))
    wrapped = "\n".join(textwrap.wrap(base64.b64encode(rebuilt).decode(), 70))
    return f"{sshsig.BEGIN}\n{wrapped}\n{sshsig.END}\n"


@pytest.mark.parametrize(
    ("kind", "sig_type", "extra", "message"),
    [
        ("ed25519", "ssh-ed448", b"", "malformed ed25519 signature"),
        ("ed25519", "ecdsa-sha2-nistp256", b"", "malformed ed25519 signature"),
        ("ed25519", "ssh-ed25519", b"\0", "malformed ed25519 signature"),
        ("ecdsa", "ecdsa-sha2-nistp384", b"", "ECDSA signature type does not match the key"),
        ("ecdsa", "ssh-ed25519", b"", "ECDSA signature type does not match the key"),
    ],
)
def test_a_relabelled_signature_is_refused_like_ssh_keygen(
    tmp_path: Path, kind: str, sig_type: str, extra: bytes, message: str
) -> None:
    key = make_key(tmp_path, kind)
    genuine = ssh_sign(key, NAMESPACE, MESSAGE, tmp_path)
    same = relabel(genuine, sshsig.parse_armor(genuine).sig_type)
    assert ours_verifies(key, NAMESPACE, MESSAGE, same)  # the rebuild itself is faithful
    assert keygen_verifies(key, NAMESPACE, MESSAGE, same, tmp_path)
    bad = relabel(genuine, sig_type, extra)
    assert not keygen_verifies(key, NAMESPACE, MESSAGE, bad, tmp_path)
    assert not ours_verifies(key, NAMESPACE, MESSAGE, bad)
    with pytest.raises(sshsig.SignatureError) as info:
        sshsig.check(sshsig.parse_armor(bad), NAMESPACE, MESSAGE)
    assert str(info.value) == message


def test_a_signature_over_other_bytes_does_not_verify(tmp_path: Path) -> None:
    key = make_key(tmp_path, "ed25519")
    sig = sshsig.parse_armor(ssh_sign(key, NAMESPACE, MESSAGE, tmp_path))
    with pytest.raises(sshsig.SignatureError) as info:
        sshsig.check(sig, NAMESPACE, MESSAGE + b"!")
    assert str(info.value) == "signature does not verify"
