"""OpenSSH ``SSH SIGNATURE`` (sshsig) verification, natively with ``cryptography``.

No ``ssh-keygen`` shell-out: the binary is found on PATH, and an authorization decision
must not be delegated to a program the caller can replace. Supported keys: ssh-ed25519,
ecdsa-sha2-nistp256/384/521, ssh-rsa with rsa-sha2-256/512 signatures (SHA-1 refused,
as OpenSSH does).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

BEGIN = "-----BEGIN SSH SIGNATURE-----"
END = "-----END SSH SIGNATURE-----"
MAGIC = b"SSHSIG"
MAX_ARMOR = 64 * 1024

_CURVES: dict[str, tuple[ec.EllipticCurve, hashes.HashAlgorithm]] = {
    "nistp256": (ec.SECP256R1(), hashes.SHA256()),
    "nistp384": (ec.SECP384R1(), hashes.SHA384()),
    "nistp521": (ec.SECP521R1(), hashes.SHA512()),
}
_RSA_HASHES: dict[str, hashes.HashAlgorithm] = {
    "rsa-sha2-256": hashes.SHA256(),
    "rsa-sha2-512": hashes.SHA512(),
}
KEY_TYPES = frozenset({"ssh-ed25519", "ssh-rsa", *(f"ecdsa-sha2-{c}" for c in _CURVES)})


class SignatureError(ValueError):
    """The signature is malformed, for something else, or does not verify."""


class _Reader:
    """SSH wire format: uint32 big-endian length-prefixed strings."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise SignatureError("truncated SSH data")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def uint32(self) -> int:
        value: int = struct.unpack(">I", self.take(4))[0]
        return value

    def string(self) -> bytes:
        return self.take(self.uint32())

    def mpint(self) -> int:
        return int.from_bytes(self.string(), "big", signed=True)

    def end(self) -> None:
        if self.pos != len(self.data):
            raise SignatureError("trailing bytes in SSH data")


def ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


@dataclass(frozen=True)
class PublicKey:
    """A public key as OpenSSH encodes it; ``blob`` is the wire form."""

    key_type: str
    blob: bytes

    @property
    def fingerprint(self) -> str:
        digest = base64.b64encode(hashlib.sha256(self.blob).digest()).decode()
        return "SHA256:" + digest.rstrip("=")

    @classmethod
    def from_blob(cls, blob: bytes) -> PublicKey:
        key_type = _Reader(blob).string().decode("ascii", "replace")
        if key_type not in KEY_TYPES:
            raise SignatureError(f"unsupported key type {key_type!r}")
        key = cls(key_type, blob)
        key.load()  # refuse malformed keys up front
        return key

    @classmethod
    def from_openssh(cls, key_type: str, b64: str) -> PublicKey:
        try:
            blob = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SignatureError("public key is not valid base64") from exc
        key = cls.from_blob(blob)
        if key.key_type != key_type:
            raise SignatureError(f"key says {key.key_type}, line says {key_type}")
        return key

    def load(self) -> ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey:
        r = _Reader(self.blob)
        r.string()
        try:
            if self.key_type == "ssh-ed25519":
                raw = r.string()
                r.end()
                if len(raw) != 32:
                    raise SignatureError("ed25519 key must be 32 bytes")
                return ed25519.Ed25519PublicKey.from_public_bytes(raw)
            if self.key_type == "ssh-rsa":
                e, n = r.mpint(), r.mpint()
                r.end()
                if n.bit_length() < 1024:
                    raise SignatureError("RSA keys under 1024 bits are refused")
                return rsa.RSAPublicNumbers(e, n).public_key()
            curve_name = r.string().decode("ascii", "replace")
            point = r.string()
            r.end()
            if self.key_type != f"ecdsa-sha2-{curve_name}":
                raise SignatureError("ECDSA curve does not match the key type")
            return ec.EllipticCurvePublicKey.from_encoded_point(_CURVES[curve_name][0], point)
        except ValueError as exc:
            if isinstance(exc, SignatureError):
                raise
            raise SignatureError(f"malformed {self.key_type} key: {exc}") from exc


@dataclass(frozen=True)
class Signature:
    key: PublicKey
    namespace: str
    hash_alg: str
    sig_type: str
    sig: bytes


def parse_armor(text: str) -> Signature:
    """Decode an armored sshsig; every structural defect is a :class:`SignatureError`."""
    if len(text) > MAX_ARMOR:
        raise SignatureError("signature is too large")
    lines = [ln.strip() for ln in text.strip().splitlines()]
    if len(lines) < 3 or lines[0] != BEGIN or lines[-1] != END:
        raise SignatureError(f"not an SSH signature: expected {BEGIN} ... {END}")
    try:
        blob = base64.b64decode("".join(lines[1:-1]), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureError("SSH signature armor is not valid base64 (truncated?)") from exc
    r = _Reader(blob)
    if r.take(6) != MAGIC:
        raise SignatureError("missing SSHSIG magic")
    if r.uint32() != 1:
        raise SignatureError("unsupported sshsig version")
    key = PublicKey.from_blob(r.string())
    namespace = r.string().decode("utf-8", "replace")
    if r.string() != b"":
        raise SignatureError("sshsig reserved field must be empty")
    hash_alg = r.string().decode("ascii", "replace")
    if hash_alg not in ("sha256", "sha512"):
        raise SignatureError(f"unsupported sshsig hash {hash_alg!r}")
    inner = _Reader(r.string())
    r.end()
    sig_type = inner.string().decode("ascii", "replace")
    sig = inner.string()
    inner.end()
    return Signature(key, namespace, hash_alg, sig_type, sig)


def signed_data(namespace: str, hash_alg: str, message: bytes) -> bytes:
    digest = hashlib.new(hash_alg, message).digest()
    return (
        MAGIC
        + ssh_string(namespace.encode())
        + ssh_string(b"")
        + ssh_string(hash_alg.encode())
        + ssh_string(digest)
    )


def check(signature: Signature, namespace: str, message: bytes) -> None:
    """Verify ``signature`` over ``message`` in ``namespace``; raise when it does not hold."""
    if signature.namespace != namespace:
        raise SignatureError(
            f"signature is for namespace {signature.namespace!r}, expected {namespace!r}"
        )
    data = signed_data(namespace, signature.hash_alg, message)
    key = signature.key.load()
    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            if signature.sig_type != "ssh-ed25519" or len(signature.sig) != 64:
                raise SignatureError("malformed ed25519 signature")
            key.verify(signature.sig, data)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            if signature.sig_type != signature.key.key_type:
                raise SignatureError("ECDSA signature type does not match the key")
            r = _Reader(signature.sig)
            ints = r.mpint(), r.mpint()
            r.end()
            if min(ints) < 1:  # negative or zero r/s: OpenSSH refuses them, so do we
                raise SignatureError("malformed ECDSA signature")
            der = encode_dss_signature(*ints)
            key.verify(der, data, ec.ECDSA(_CURVES[signature.key.key_type[11:]][1]))
        else:
            algorithm = _RSA_HASHES.get(signature.sig_type)
            if algorithm is None:
                raise SignatureError(f"RSA signature type {signature.sig_type!r} is refused")
            key.verify(signature.sig, data, padding.PKCS1v15(), algorithm)
    except InvalidSignature as exc:
        raise SignatureError("signature does not verify") from exc
