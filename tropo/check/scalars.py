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
_DIGITLESS_FLOATS = frozenset(f"{sign}{word}" for sign in ("", "+", "-")
                              for word in ("inf", "infinity", "nan"))


def plain_scalar(raw: str) -> Any:
    """An unquoted scalar, read the way vivary-tropo reads it."""
    raw = raw.strip()
    if raw in ("", "~", "null", "Null", "NULL"):
        return None
    if raw in ("true", "True", "TRUE"):
        return True
    if raw in ("false", "False", "FALSE"):
        return False
    if _DIGIT.search(raw) is None and raw.lower() not in _DIGITLESS_FLOATS:
        return raw  # int() and float() would both refuse it: spare them the exceptions
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw
