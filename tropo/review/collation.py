"""The order the suite sorts workspace paths and ids in: JavaScript's `localeCompare` as
vivary-core pins it, a primary order by character and a tertiary one by case, over a fixed
domain of characters (tab to carriage return, U+0020 to U+017F, U+2000 to U+206F).

We know that order for ASCII, where it is the list below (DEL ignored, a letter's capital
after its small); the rest of the domain follows a pinned table we do not carry, so a string
that needs it is `Unordered` and the caller says so rather than guess. A string outside the
domain is not collatable at all: the suite then sorts it after every collatable one, by
UTF-16 code units (`path_key`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_DOMAIN = ((0x09, 0x0D), (0x20, 0x17F), (0x2000, 0x206F))
_ORDER = "\t\n\x0b\x0c\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY = {ch: rank for rank, ch in enumerate(_ORDER, start=1)}
_IGNORED = "\x7f"
T = TypeVar("T")
Key = tuple[int, tuple[tuple[int, ...], tuple[int, ...]] | bytes]


class Unordered(ValueError):
    """A collatable character whose place in the suite's order we do not know."""


def collatable(text: str) -> bool:
    return all(any(low <= ord(ch) <= high for low, high in _DOMAIN) for ch in text)


def locale_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The sort key of a collatable ASCII string; raises Unordered for any other."""
    primary, tertiary = [], []
    for ch in text:
        if ch == _IGNORED:
            continue
        rank = _PRIMARY.get(ch.lower() if ch.isascii() else ch)
        if rank is None:
            raise Unordered(f"no known collation order for U+{ord(ch):04X}")
        primary.append(rank)
        tertiary.append(2 if ch.isupper() else 1)
    return tuple(primary), tuple(tertiary)


def utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def ordered(items: list[T], key: Callable[[T], Any]) -> list[T]:
    """``sorted(items, key=key)``, asking for no key where there is nothing to order, so a
    lone string needs no known collation."""
    return sorted(items, key=key) if len(items) > 1 else list(items)


def path_key(text: str) -> Key:
    """Collatable strings in locale order first, then the rest by UTF-16 code units."""
    return (0, locale_key(text)) if collatable(text) else (1, utf16_key(text))
