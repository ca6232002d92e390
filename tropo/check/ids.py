"""One grammar for ids: what a file name derives, and what a ``ref`` may name.

vivary-tropo keeps only ``a-z 0-9 . _ -`` of a name, so every file named in another
script (``日本語.md``, ``한국어.md``) became ``untitled`` and all of them one node. Here a
name's letters, digits and marks of every script are kept (lowercased, NFC), so such
names stay distinct and can be referred to. A name written in ASCII derives exactly the
id vivary-tropo derives, and an ASCII ref is checked by its very pattern, so every id
and ref of an ASCII workspace means what it meant there.
"""

from __future__ import annotations

import re
import unicodedata

ASCII_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")  # vivary-tropo's, ``$`` and all
_MD_SUFFIX = re.compile(r"\.(md|markdown)$")


def _kept(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum() or ch in "._-"
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def slugify(name: str) -> str:
    """A file or folder name as an id: runs of other characters become one ``-``."""
    text = unicodedata.normalize("NFC", _MD_SUFFIX.sub("", name).lower())
    out: list[str] = []
    replacing = False
    for ch in text:
        if _kept(ch):
            out.append(ch)
        elif not replacing:
            out.append("-")
        replacing = not _kept(ch)
    return "".join(out).strip("-") or "untitled"


def is_slug(value: object) -> bool:
    """Whether ``value`` is an id a name could derive (a ``slug`` or ``ref`` value)."""
    if not isinstance(value, str):
        return False
    if value.isascii():
        return ASCII_SLUG.match(value) is not None
    return (value[:1].isalnum() and all(_kept(ch) for ch in value)
            and value == unicodedata.normalize("NFC", value.lower()))
