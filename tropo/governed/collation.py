"""The order the suite sorts workspace paths and ids in: JavaScript's `localeCompare` as
vivary-core pins it, a primary order by character group and then an order within a group
(accent and case), over a fixed domain of characters (tab to carriage return, U+0020 to
U+017F, U+2000 to U+206F), some of them ignored. The table is ICU's (`collation_table.py`).

A string outside the domain is not collatable: `locale_key` raises `Uncollatable` for it
(the suite's domain error), and the suite sorts such strings after every collatable one,
by UTF-16 code units (`path_key`).
"""

from __future__ import annotations

from tropo.governed.collation_table import GROUPS, IGNORED

_DOMAIN = ((0x09, 0x0D), (0x20, 0x17F), (0x2000, 0x206F))
_WEIGHTS = {ch: (primary, within) for primary, group in enumerate(GROUPS, start=1)
            for within, ch in enumerate(group, start=1)}
Key = tuple[int, tuple[tuple[int, ...], tuple[int, ...]] | bytes]


class Uncollatable(ValueError):
    """A character outside the suite's collation domain."""


def collatable(text: str) -> bool:
    return all(any(low <= ord(ch) <= high for low, high in _DOMAIN) for ch in text)


def locale_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The sort key of a collatable string: primary weights, then weights within groups
    (a shorter run sorts first); raises Uncollatable for any other string."""
    primary, within = [], []
    for ch in text:
        if ch in IGNORED:
            continue
        weights = _WEIGHTS.get(ch)
        if weights is None:
            raise Uncollatable(f"character U+{ord(ch):04X} is outside the collation domain")
        primary.append(weights[0])
        within.append(weights[1])
    return tuple(primary), tuple(within)


def utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def path_key(text: str) -> Key:
    """Collatable strings in locale order first, then the rest by UTF-16 code units."""
    return (0, locale_key(text)) if collatable(text) else (1, utf16_key(text))
