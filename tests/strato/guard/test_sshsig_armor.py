"""The armor around an sshsig, read as ssh-keygen reads it (any line width, strict
base64, the same structural refusals) plus a size bound; each refusal says what is wrong."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from strato.guard import sshsig
from tests.support.guard import Key, keygen_verifies, ours_verifies, ssh_sign

NS = "stratum-guard-override"
MSG = b"payload"


def _body(armor: str) -> str:
    return "".join(armor.strip().splitlines()[1:-1])


def _refusal(text: str) -> str:
    with pytest.raises(sshsig.SignatureError) as info:
        sshsig.parse_armor(text)
    return str(info.value)


def test_the_body_on_one_line_verifies_like_ssh_keygen(tmp_path: Path, key: Key) -> None:
    armor = ssh_sign(key, NS, MSG, tmp_path)
    one_line = f"{sshsig.BEGIN}\n{_body(armor)}\n{sshsig.END}\n"
    assert keygen_verifies(key, NS, MSG, one_line, tmp_path)
    assert ours_verifies(key, NS, MSG, one_line)


def test_a_character_outside_base64_is_refused_like_ssh_keygen(tmp_path: Path, key: Key) -> None:
    armor = ssh_sign(key, NS, MSG, tmp_path)
    body = _body(armor)
    bad = f"{sshsig.BEGIN}\n{body[:20]}!{body[20:]}\n{sshsig.END}\n"
    assert not keygen_verifies(key, NS, MSG, bad, tmp_path)
    assert not ours_verifies(key, NS, MSG, bad)
    assert _refusal(bad) == "SSH signature armor is not valid base64 (truncated?)"


def test_armor_without_its_end_line_is_refused(tmp_path: Path, key: Key) -> None:
    armor = ssh_sign(key, NS, MSG, tmp_path)
    expected = f"not an SSH signature: expected {sshsig.BEGIN} ... {sshsig.END}"
    assert _refusal(armor.replace(sshsig.END, "")) == expected
    assert _refusal(armor.replace(sshsig.BEGIN, "")) == expected


def test_the_size_bound_is_exact() -> None:
    exactly = f"{sshsig.BEGIN}\n" + "A" * (sshsig.MAX_ARMOR - len(sshsig.BEGIN) - len(sshsig.END) - 2)
    exactly += f"\n{sshsig.END}"
    assert len(exactly) == sshsig.MAX_ARMOR
    assert _refusal(exactly) != "signature is too large"  # refused later, for its content
    assert _refusal(exactly + "\n") == "signature is too large"


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _blob(armor: str) -> tuple[bytes, list[bytes]]:
    """(magic + version, [key, namespace, reserved, hash, signature]) of an sshsig."""
    blob = base64.b64decode(_body(armor))
    head, rest, fields = blob[:10], blob[10:], []
    while rest:
        n = int.from_bytes(rest[:4], "big")
        fields.append(rest[4 : 4 + n])
        rest = rest[4 + n :]
    return head, fields


def _armor(blob: bytes) -> str:
    return f"{sshsig.BEGIN}\n{base64.b64encode(blob).decode()}\n{sshsig.END}\n"


@pytest.mark.parametrize(
    ("defect", "message"),
    [
        ("magic", "missing SSHSIG magic"),
        ("version", "unsupported sshsig version"),
        ("reserved", "sshsig reserved field must be empty"),
        ("hash", "unsupported sshsig hash 'sha1'"),
        ("trailing", "trailing bytes in SSH data"),
        ("truncated", "truncated SSH data"),
        ("key type", "unsupported key type 'ssh-dss'"),
    ],
)
def test_each_structural_defect_is_named_and_refused_like_ssh_keygen(
    tmp_path: Path, key: Key, defect: str, message: str
) -> None:
    head, (pub, ns, reserved, hashalg, sig) = _blob(ssh_sign(key, NS, MSG, tmp_path))
    if defect == "magic":
        head = b"SSHSIH" + head[6:]
    elif defect == "version":
        head = head[:6] + (2).to_bytes(4, "big")
    elif defect == "reserved":
        reserved = b"x"
    elif defect == "hash":
        hashalg = b"sha1"
    elif defect == "key type":
        pub = _string(b"ssh-dss") + pub[4 + int.from_bytes(pub[:4], "big") :]
    blob = head + b"".join(map(_string, (pub, ns, reserved, hashalg, sig)))
    if defect == "trailing":
        blob += b"\0"
    elif defect == "truncated":
        blob = blob[:-3]
    bad = _armor(blob)
    # ssh-keygen ignores the reserved field (its signed data always holds it empty); we
    # refuse a non-empty one, stricter on purpose: bytes nobody signed must not ride along
    assert keygen_verifies(key, NS, MSG, bad, tmp_path) is (defect == "reserved")
    assert _refusal(bad) == message


@pytest.mark.parametrize("field", ["key type", "namespace", "hash", "signature type"])
def test_bytes_that_are_not_text_are_a_refusal_not_a_decode_error(
    tmp_path: Path, key: Key, field: str
) -> None:
    """Names in the blob are decoded leniently so that junk bytes end as a SignatureError
    (a refusal), never as a UnicodeDecodeError escaping the verifier."""
    head, (pub, ns, reserved, hashalg, sig) = _blob(ssh_sign(key, NS, MSG, tmp_path))
    junk = b"\xff\xfe"
    if field == "key type":
        pub = _string(junk) + pub[4 + int.from_bytes(pub[:4], "big") :]
    elif field == "namespace":
        ns = junk
    elif field == "hash":
        hashalg = junk
    else:
        sig = _string(junk) + sig[4 + int.from_bytes(sig[:4], "big") :]
    bad = _armor(head + b"".join(map(_string, (pub, ns, reserved, hashalg, sig))))
    assert not keygen_verifies(key, NS, MSG, bad, tmp_path)
    with pytest.raises(sshsig.SignatureError):
        sshsig.check(sshsig.parse_armor(bad), NS, MSG)
