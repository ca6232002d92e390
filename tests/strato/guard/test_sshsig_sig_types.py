"""A signature labelled with another algorithm than its key's is refused, as
``ssh-keygen -Y verify`` refuses it, even when the signature bytes themselves are valid."""

from __future__ import annotations

import base64
import copy
import struct
import textwrap
from pathlib import Path

import pytest

from strato.guard import sshsig
from tests.support.guard import (
    POLICY,
    Workspace,
    keygen_verifies,
    make_key,
    ours_verifies,
    out,
    run,
    ssh_sign,
)
from tests.support.guard import WINDOW_ASK as ASK
from tests.support.guard import WINDOW_RID as RID

NAMESPACE = "stratum-guard-override"
MESSAGE = b"payload"


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def rewrap(armor: str, sig_type: str, sig: bytes) -> str:
    """The same sshsig with its inner (algorithm name, signature bytes) replaced."""
    body = "".join(armor.strip().splitlines()[1:-1])
    blob = base64.b64decode(body)
    head, rest = blob[:10], blob[10:]  # "SSHSIG" and the version
    fields = []
    for _ in range(5):  # key, namespace, reserved, hash, signature
        (n,) = struct.unpack(">I", rest[:4])
        fields.append(rest[4 : 4 + n])
        rest = rest[4 + n :]
    assert rest == b""
    fields.pop()
    rebuilt = head + b"".join(map(_string, fields)) + _string(_string(sig_type.encode()) + _string(sig))
    wrapped = "\n".join(textwrap.wrap(base64.b64encode(rebuilt).decode(), 70))
    return f"{sshsig.BEGIN}\n{wrapped}\n{sshsig.END}\n"


def relabel(armor: str, sig_type: str, extra: bytes = b"") -> str:
    """The same signature under another algorithm name (``extra`` bytes appended)."""
    return rewrap(armor, sig_type, sshsig.parse_armor(armor).sig + extra)


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


def negated(armor: str) -> str | None:
    """The ECDSA signature with the leading zero byte of r or s dropped, which makes that
    mpint negative (RFC 4251); None when neither has one (sign again)."""
    sig = sshsig.parse_armor(armor)
    r, s = _mpints(sig.sig)
    if r[:1] != b"\0" and s[:1] != b"\0":
        return None
    stripped = b"".join(_string(x[1:] if x[:1] == b"\0" else x) for x in (r, s))
    return rewrap(armor, sig.sig_type, stripped)


def test_a_negative_ecdsa_mpint_is_refused_like_ssh_keygen(tmp_path: Path) -> None:
    """Read as unsigned, the negative mpint would be the genuine r or s and the
    re-encoded signature would verify; OpenSSH refuses it, and so must we."""
    key = make_key(tmp_path, "ecdsa")
    for attempt in range(64):  # r or s has a leading zero in about 3 signatures of 4
        message = MESSAGE + bytes([attempt])
        genuine = ssh_sign(key, NAMESPACE, message, tmp_path)
        if (bad := negated(genuine)) is not None:
            break
    else:
        raise AssertionError("no signature with a leading zero byte in 64 tries")
    assert keygen_verifies(key, NAMESPACE, message, genuine, tmp_path)
    assert not keygen_verifies(key, NAMESPACE, message, bad, tmp_path)
    assert not ours_verifies(key, NAMESPACE, message, bad)
    with pytest.raises(sshsig.SignatureError) as info:
        sshsig.check(sshsig.parse_armor(bad), NAMESPACE, message)
    assert str(info.value) == "malformed ECDSA signature (r and s must be positive)"


def test_the_override_cli_refuses_a_negative_mpint_without_a_traceback(ws: Workspace) -> None:
    """It used to escape the check as a ValueError: a traceback instead of a refusal."""
    key = make_key(ws.tmp, "ecdsa")
    ws.trust(key.signers_line("alice@example.com"))
    ws.commit({"NOTES.md": "n\n"}, "work under review")
    assert run(ws, "register", stdin={"resource_id": RID, **copy.deepcopy(POLICY)}).returncode == 0
    move = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    assert run(ws, "transition", stdin=move).returncode == 0
    for _ in range(64):
        signed = run(ws, "sign", "--key", str(key.path), stdin={"kind": "override", **ASK})
        if (bad := negated(signed.stdout)) is not None:
            break
    else:
        raise AssertionError("no signature with a leading zero byte in 64 tries")
    proc = run(ws, "override", "--json", stdin={**ASK, "authorization": bad})  # no Traceback
    assert proc.returncode == 1 and out(proc)["error_type"] == "override_unavailable"
    assert "malformed ECDSA signature" in out(proc)["message"]
    ok = run(ws, "override", "--json", stdin={**ASK, "authorization": signed.stdout})
    assert ok.returncode == 0, ok.stdout  # the genuine one still works
