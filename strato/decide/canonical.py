"""Canonical JSON for capsules, receipts and verdicts: it lives in ``tropo.canonical``
because exo's governed control hashes the same bytes and must not import strato."""

from tropo.canonical import (
    MAX_SAFE_INTEGER,
    canonicalize,
    deterministic_id,
    fingerprint,
    is_lossless,
    js_number,
    js_string,
    sha256_hex,
)

__all__ = [
    "MAX_SAFE_INTEGER",
    "canonicalize",
    "deterministic_id",
    "fingerprint",
    "is_lossless",
    "js_number",
    "js_string",
    "sha256_hex",
]
