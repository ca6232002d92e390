"""The text and instant rules every control record shares.

Identifiers, projects and paths are *already canonical* text: an identity that two
spellings could reach would let one holder claim the same thing twice.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from tropo.governed.freshness import parse_instant


def is_nfc(value: str) -> bool:
    return unicodedata.normalize("NFC", value) == value


def has_control_chars(value: str) -> bool:
    return any(unicodedata.category(ch)[0] == "C" for ch in value)


def utf8_length(value: str) -> int | None:
    """The UTF-8 size, or None for a string with a lone surrogate (not encodable)."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def is_trimmed(value: Any) -> bool:
    """A non-empty string without surrounding whitespace."""
    return isinstance(value, str) and bool(value) and value == value.strip()


def is_bounded_text(value: Any, max_bytes: int, *, controls_allowed: bool = False) -> bool:
    """Canonical text: non-empty, unpadded, NFC, within ``max_bytes`` of UTF-8 and,
    unless allowed, free of control/format/unassigned characters."""
    return (
        type(value) is str
        and is_trimmed(value)
        and is_nfc(value)
        and (controls_allowed or not has_control_chars(value))
        and (utf8_length(value) or max_bytes + 1) <= max_bytes
    )


def instant_ms(value: Any) -> float | None:
    """A timezone-aware ISO-8601 instant with a date and a time (``Z`` accepted) as
    milliseconds since the epoch, or None."""
    if not is_bounded_text(value, 64) or "T" not in value:
        return None
    parsed = parse_instant(value)
    return None if parsed is None else parsed.timestamp() * 1000
