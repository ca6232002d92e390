"""Sealing a ledger entry: its digest never covers the digest field itself."""

from __future__ import annotations

from strato.guard.canonical import entry_digest, seal

ENTRY = {"from_state": "draft", "to_state": "review", "prev_digest": "0" * 64, "ts_ms": 1}


def test_resealing_a_sealed_entry_gives_the_same_digest_and_line() -> None:
    sealed, line = seal(ENTRY)
    again, line_again = seal(sealed)
    assert again == sealed and line_again == line
    assert entry_digest(sealed, ENTRY["prev_digest"]) == sealed["entry_digest"]
    assert entry_digest({**sealed, "entry_digest": "f" * 64}, ENTRY["prev_digest"]) == sealed["entry_digest"]
