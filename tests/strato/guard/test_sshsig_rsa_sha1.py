"""``ssh-rsa`` (SHA-1) signatures are refused, exactly where ``ssh-keygen -Y verify`` refuses.

ssh-keygen will not make an sshsig with the SHA-1 ``ssh-rsa`` algorithm, so the blobs are
built here with ``cryptography`` from a key ssh-keygen generated. The same construction
with ``rsa-sha2-256``/``rsa-sha2-512`` must verify in both verifiers, which proves the
blobs are well formed and that only the signature algorithm is being refused.
"""

from __future__ import annotations

import base64
import struct
import textwrap
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from strato.guard import sshsig
from tests.support.guard import Key, keygen_verifies, make_key, ours_verifies

NAMESPACE = "stratum-guard-override"
MESSAGE = b'{"action":"override","ledger_head":"abc"}'
SIG_HASH = {"ssh-rsa": hashes.SHA1(), "rsa-sha2-256": hashes.SHA256(), "rsa-sha2-512": hashes.SHA512()}


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def craft(key: Key, sig_type: str, hash_alg: str = "sha512") -> str:
    """An armored sshsig over MESSAGE, signed with ``sig_type`` (PROTOCOL.sshsig)."""
    private = serialization.load_ssh_private_key(key.path.read_bytes(), password=None)
    assert isinstance(private, rsa.RSAPrivateKey)
    digest = hashes.Hash({"sha256": hashes.SHA256(), "sha512": hashes.SHA512()}[hash_alg])
    digest.update(MESSAGE)
    to_sign = (
        b"SSHSIG"
        + _string(NAMESPACE.encode())
        + _string(b"")
        + _string(hash_alg.encode())
        + _string(digest.finalize())
    )
    raw = private.sign(to_sign, padding.PKCS1v15(), SIG_HASH[sig_type])
    public_blob = base64.b64decode(key.public.split()[1])
    blob = (
        b"SSHSIG"
        + struct.pack(">I", 1)
        + _string(public_blob)
        + _string(NAMESPACE.encode())
        + _string(b"")
        + _string(hash_alg.encode())
        + _string(_string(sig_type.encode()) + _string(raw))
    )
    body = "\n".join(textwrap.wrap(base64.b64encode(blob).decode(), 70))
    return f"{sshsig.BEGIN}\n{body}\n{sshsig.END}\n"


@pytest.fixture(scope="module")
def rsa_key(tmp_path_factory: pytest.TempPathFactory) -> Key:
    return make_key(tmp_path_factory.mktemp("rsa"), "rsa")


@pytest.mark.parametrize("hash_alg", ["sha256", "sha512"])
@pytest.mark.parametrize(
    ("sig_type", "accepted"),
    [("ssh-rsa", False), ("rsa-sha2-256", True), ("rsa-sha2-512", True)],
)
def test_rsa_signature_algorithms_agree_with_ssh_keygen(
    tmp_path: Path, rsa_key: Key, sig_type: str, hash_alg: str, accepted: bool
) -> None:
    armor = craft(rsa_key, sig_type, hash_alg)
    assert keygen_verifies(rsa_key, NAMESPACE, MESSAGE, armor, tmp_path) is accepted
    assert ours_verifies(rsa_key, NAMESPACE, MESSAGE, armor) is accepted


def test_sha1_is_refused_by_name_not_as_a_bad_signature(rsa_key: Key) -> None:
    """The blob parses and the RSA maths would hold; the algorithm itself is the refusal."""
    sig = sshsig.parse_armor(craft(rsa_key, "ssh-rsa"))
    assert sig.sig_type == "ssh-rsa"
    with pytest.raises(sshsig.SignatureError, match="'ssh-rsa' is refused"):
        sshsig.check(sig, NAMESPACE, MESSAGE)
