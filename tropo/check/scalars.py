"""What both frontmatter readers share: how a plain scalar reads, how deep a block may
nest, and the one error either raises, so neither has to import the other.

The fast path (``frontmatter``) and PyYAML's safety layer (``yamlsafe``) must read every
value the same way vivary-tropo does; one owner of the scalar rules keeps them equal.
"""

from __future__ import annotations

import re
from typing import Any

MAX_DEPTH = 32


class FrontmatterError(Exception):
    """The frontmatter block is present but unusable; ``line`` is 1-based in the file."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


_DIGIT = re.compile(r"\d")  # any decimal digit int() and float() accept, Unicode ones too
# With a digit present, int() and float() accept only these ASCII characters inside
# (blanks at the ends are stripped): no letter but an exponent's, no ``inf`` or ``nan``.
_NOT_NUMERIC = re.compile(r"[^0-9+\-._eE]")
# ASCII letters that start no keyword (null, true, false) and no digitless float (inf,
# infinity, nan, in any case); int() and float() refuse any other text they start.
_PLAIN_START = frozenset("abcdeghjklmopqrsuvwxyzABCDEGHJKLMOPQRSUVWXYZ")
_DIGITLESS_FLOATS = frozenset(f"{sign}{word}" for sign in ("", "+", "-")
                              for word in ("inf", "infinity", "nan"))


def plain_scalar(raw: str) -> Any:
    """An unquoted scalar, read the way vivary-tropo reads it."""
    raw = raw.strip()
    if raw[:1] in _PLAIN_START:
        return raw  # a letter no keyword or number starts: text (most values)
    if raw in ("", "~", "null", "Null", "NULL"):
        return None
    if raw in ("true", "True", "TRUE"):
        return True
    if raw in ("false", "False", "FALSE"):
        return False
    # int() and float() would both refuse these: spare them the exceptions
    if _DIGIT.search(raw) is None:
        if raw.lower() not in _DIGITLESS_FLOATS:
            return raw
    elif raw.isascii() and _NOT_NUMERIC.search(raw) is not None:
        return raw  # an ASCII character no number with a digit holds (``c0042-x``)
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw
