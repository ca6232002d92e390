"""One grammar for ids: what a file name derives, and what a ``ref`` may name.

vivary-tropo keeps only ``a-z 0-9 . _ -`` of a name, so every file named in another
script (``日本語.md``, ``한국어.md``) became ``untitled`` and all of them one node. Here a
name's letters, digits and marks of every script are kept (lowercased, NFC), so such
names stay distinct and can be referred to. A name written in ASCII derives exactly the
id vivary-tropo derives, and an ASCII ref is checked by its very pattern, so every id
and ref of an ASCII workspace means what it meant there. A name with other letters
derives another id than vivary-tropo's (``Café.md``: ``café``, upstream's ``caf``), so a
ref written for vivary-tropo still resolves through :func:`upstream_aliases`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Container, Iterable

ASCII_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")  # vivary-tropo's, ``$`` and all
_MD_SUFFIX = re.compile(r"\.(md|markdown)$")
_MD_SUFFIX_ANY_CASE = re.compile(r"\.(md|markdown)$", re.I)
_UPSTREAM_DROPPED = re.compile(r"[^a-z0-9._-]+")
INDEX_NAMES = frozenset({"readme", "index", "_index"})


def _kept(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum() or ch in "._-"
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def slugify(name: str) -> str:
    """A file or folder name as an id: runs of other characters become one ``-``."""
    if name.isascii():  # keeps a-z 0-9 . _ - of the lowercased name, as upstream does
        return upstream_slugify(name)
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


def upstream_slugify(name: str) -> str:
    """vivary-tropo 0.5's slug: only ``a-z 0-9 . _ -`` of the lowercased name survive."""
    return _UPSTREAM_DROPPED.sub("-", _MD_SUFFIX.sub("", name).lower()).strip("-") or "untitled"


def derive_id(rel: str, root_name: str, slug: Callable[[str], str] = slugify) -> str:
    """The file-name slug; an index document (README, index, _index, or a file named
    like its folder) *is* its folder and takes the folder's id."""
    folder, _, name = rel.rpartition("/")
    stem = _MD_SUFFIX_ANY_CASE.sub("", name)
    parent = folder.rpartition("/")[2] if folder else root_name
    if stem.lower() in INDEX_NAMES or stem.lower() == parent.lower():
        return slug(parent)
    return slug(stem)


def upstream_aliases(docs: Iterable[tuple[str, str]], taken: Container[str],
                     root_name: str) -> dict[str, str]:
    """vivary-tropo's id -> ours, for each (path, id) whose name is not all ASCII (an
    ASCII name derives the same id in both) and whose old id is not ``taken`` (held by a
    document now). Two names that shared an old id resolve to the first, as vivary-tropo
    kept the first. Costs one ``isascii`` per ASCII path."""
    plain_root = root_name.isascii()
    out: dict[str, str] = {}
    for rel, doc_id in docs:
        if (rel.isascii() and (plain_root or "/" in rel)) or not doc_id:
            continue
        old = derive_id(rel, root_name, upstream_slugify)
        if old != doc_id and old not in taken:
            out.setdefault(old, doc_id)
    return out
