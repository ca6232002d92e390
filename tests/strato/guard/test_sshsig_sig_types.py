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


def _mpints(data: bytes) -> list[bytes]:
    out = []
    while data:
        (n,) = struct.unpack(">I", data[:4])
        out.append(data[4 : 4 + n])
        data = data[4 + n :]
    return out


def test_a_negative_ecdsa_mpint_is_refused_like_ssh_keygen(tmp_path: Path) -> None:
    """An mpint with its high bit set and no leading zero is negative (RFC 4251); read as
    unsigned it would be the genuine r or s, and a re-encoded signature would verify."""
    key = make_key(tmp_path, "ecdsa")
    for attempt in range(64):  # r or s needs a leading zero byte: about 3 signatures in 4
        genuine = ssh_sign(key, NAMESPACE, MESSAGE + bytes([attempt]), tmp_path)
        sig = sshsig.parse_armor(genuine)
        r, s = _mpints(sig.sig)
        if r[:1] == b"\0" or s[:1] == b"\0":
            break
    else:
        raise AssertionError("no signature with a leading zero byte in 64 tries")
    message = MESSAGE + bytes([attempt])
    stripped = b"".join(_string(x[1:] if x[:1] == b"\0" else x) for x in (r, s))
    body = base64.b64decode("".join(genuine.strip().splitlines()[1:-1]))
    # the blob ends with string(string(type) + string(signature)): rebuild that last field
    outer_start = len(body) - (4 + 4 + len(sig.sig_type) + 4 + len(sig.sig))
    inner = _string(sig.sig_type.encode()) + _string(stripped)
    bad = body[:outer_start] + _string(inner)
    wrapped = "\n".join(textwrap.wrap(base64.b64encode(bad).decode(), 70))
    bad_armor = f"{sshsig.BEGIN}\n{wrapped}\n{sshsig.END}\n"
    assert keygen_verifies(key, NAMESPACE, message, genuine, tmp_path)
    assert not keygen_verifies(key, NAMESPACE, message, bad_armor, tmp_path)
    assert not ours_verifies(key, NAMESPACE, message, bad_armor)
    with pytest.raises(sshsig.SignatureError):  # a refusal, not a crash of another kind
        sshsig.check(sshsig.parse_armor(bad_armor), NAMESPACE, message)
