"""How text someone else chose is shown: the one sanitizer for terminals, Markdown and reports.

A transcript, a ledger field, a node title, a run id or a note is chosen by its author,
not by the person reading it. Shown raw, it can move the cursor or write the clipboard
(CSI, OSC 52), reorder a line (bidi), hide a character (every ``Default_Ignorable_Code_Point``,
e.g. ``release:1.0`` + U+034F looks exactly like ``release:1.0``), or add a line or a
heading. So every such character is shown as ``U+XXXX`` and titles are made one line.

Redaction is the producer's step, with the one redactor (:mod:`tropo.redact`): text from
a private source (a transcript, a model's answer, a hook's refusal) is redacted before it
is staged, so before it is shown or committed. These forms do not redact: a name (a
resource id, a node id, a path) redacted would look like another, and a long dated slug
looks like a token to the redactor.

The forms: :func:`visible` (escape only), :func:`line` (a title or a name: one line),
:func:`block` (a file body on a terminal: its lines kept), :func:`markdown` (a line whose
Markdown punctuation is escaped) and :func:`code_span` (a name as inline code).
"""

from __future__ import annotations

import bisect
import re
import unicodedata

#: Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties, Unicode 17), as
#: Node's ``/\p{Default_Ignorable_Code_Point}/u`` gives them; Python's unicodedata has no
#: such property. A test re-derives the table from Node over every code point.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
_STARTS = [low for low, _ in DEFAULT_IGNORABLE]
#: Controls (C0, DEL, C1), format characters (bidi among them), line and paragraph
#: separators, surrogates, private use and unassigned code points.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_MARKDOWN = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character


def default_ignorable(c: str) -> bool:
    """Whether the character ``c`` is a Default_Ignorable_Code_Point."""
    code = ord(c)
    at = bisect.bisect_right(_STARTS, code) - 1
    return at >= 0 and code <= DEFAULT_IGNORABLE[at][1]


def hidden(c: str) -> bool:
    """Whether ``c`` moves, hides or reorders text, or passes for another character (a
    space other than U+0020: NBSP looks like a space)."""
    if " " <= c <= "~":
        return False
    category = unicodedata.category(c)
    return (category in _HIDDEN_CATEGORIES or (category == "Zs" and c != " ")
            or default_ignorable(c))


def visible(value: object) -> str:
    """``value`` with every :func:`hidden` character shown as ``U+XXXX``: a reader sees
    what the bytes hold, in order."""
    text = "" if value is None else str(value)
    if text.isascii() and text.isprintable():  # U+0020-U+007E only: nothing is hidden
        return text
    return "".join(f"U+{ord(c):04X}" if hidden(c) else c for c in text)


def line(value: object, limit: int | None = None) -> str:
    """Author-chosen text as one line a terminal shows safely: every run of whitespace
    (line breaks included) one space, cut at ``limit`` characters, then every hidden
    character shown as ``U+XXXX``."""
    text = " ".join(("" if value is None else str(value)).split())
    return visible(text if limit is None else text[:limit])


def block(value: object) -> str:
    """Author-chosen text of many lines (a file body) for a terminal: its line breaks and
    tabs kept, every other hidden character shown as ``U+XXXX``."""
    text = ("" if value is None else str(value)).replace("\r\n", "\n")
    return "\n".join("\t".join(visible(cell) for cell in row.split("\t")) for row in text.split("\n"))


def markdown(value: object, limit: int | None = None) -> str:
    """:func:`line`, with every ASCII punctuation character backslash-escaped: the text
    stays text in CommonMark and GitHub Markdown (no heading, list, link, image, HTML,
    entity, emphasis or table cell). GitHub still turns an ``@name`` in text into a
    mention: where a comment is posted, show names with :func:`code_span`."""
    return _MARKDOWN.sub(r"\\\1", line(value, limit))


def code_span(value: object, limit: int | None = None) -> str:
    """A name as one inline code span of its :func:`visible` text: its edge spaces are
    shown (``"a "`` is another name than ``"a"``), it is cut at ``limit`` characters, and
    the fence is longer than any backtick run inside. Empty for an empty name."""
    text = visible(value)
    core = text.strip(" ")
    if core != text:
        lead, trail = len(text) - len(text.lstrip(" ")), len(text) - len(text.rstrip(" "))
        text = "U+0020" * lead + core + "U+0020" * trail
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    if not text:
        return ""
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return f"{fence} {text} {fence}"
