"""The one sanitizer: whatever an author chose, what is shown holds no control, bidi or
default-ignorable character, a line stays one line, Markdown stays text, and a key is
redacted; plain printable text passes unchanged. The default-ignorable table is what
Node's own Unicode data gives."""

from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.requirements import missing
from tropo import untrusted
from tropo.redact import redact

# Every code point Node calls Default_Ignorable, as ranges "low-high" (hex), one a line.
NODE_TABLE = r"""
let start = -1;
for (let c = 0; c <= 0x110000; c++) {
  const ignorable = c <= 0x10ffff && /\p{Default_Ignorable_Code_Point}/u.test(String.fromCodePoint(c));
  if (ignorable && start < 0) start = c;
  if (!ignorable && start >= 0) { console.log(`${start.toString(16)}-${(c - 1).toString(16)}`); start = -1; }
}
"""

LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def _never_shown(c: str) -> bool:
    """A character no output form may hold: C0, DEL, C1, bidi, default-ignorable."""
    bidi = unicodedata.bidirectional(c) in ("LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI")
    return unicodedata.category(c) == "Cc" or bidi or untrusted.default_ignorable(c) or c in "\u200e\u200f\u061c"


def test_the_table_is_nodes_default_ignorable_property() -> None:
    node = shutil.which("node")
    if node is None:
        missing("node not installed (apt-get install nodejs): the default-ignorable table cannot be checked")
    proc = subprocess.run([node, "-e", NODE_TABLE], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    ranges = [tuple(int(x, 16) for x in row.split("-")) for row in proc.stdout.split()]
    assert ranges == list(untrusted.DEFAULT_IGNORABLE)
    inside = {c for low, high in ranges for c in range(low, high + 1)}
    assert all(untrusted.default_ignorable(chr(c)) == (c in inside) for c in range(0x110000))


@pytest.mark.parametrize("c", ["\u034f", "\u115f", "\u3164", "\ufe0f", "\U000e0001", "\u00ad", "\u2066"])
def test_default_ignorables_python_calls_printable_are_shown(c: str) -> None:
    text = f"release:1.0{c}"
    assert untrusted.visible(text) == f"release:1.0U+{ord(c):04X}"
    assert untrusted.code_span(text) != untrusted.code_span("release:1.0")


def test_each_form_on_a_hostile_tool_name() -> None:
    token = "ghp_" + "A1b2" * 9
    name = f"Evil\x1b[2K\x1b]52;c;aGk=\x07{token}\n# Heading"
    assert untrusted.line(redact(name)) == "EvilU+001B[2KU+001B]52;c;aGk=U+0007[REDACTED] # Heading"
    assert untrusted.markdown(redact(name)).endswith(r"[REDACTED\] \# Heading")
    assert untrusted.visible(name) == name.replace("\x1b", "U+001B").replace("\x07", "U+0007").replace(
        "\n", "U+000A")
    assert untrusted.block(f"a\tb\r\n{name}") == f"a\tb\nEvilU+001B[2KU+001B]52;c;aGk=U+0007{token}\n# Heading"
    assert untrusted.line(name, 4) == "Evil" and untrusted.line(None) == untrusted.visible(None) == ""


def test_no_form_redacts_a_name() -> None:
    """A dated slug looks like a token to the redactor, and two redacted ids look alike:
    redaction is the producer's step, for private text only."""
    slug = "meetings/2026-06-12-kickoff-with-the-whole-team-and-guests"
    assert redact(slug) != slug
    assert untrusted.line(slug) == untrusted.visible(slug) == untrusted.block(slug) == slug
    assert untrusted.code_span(slug) == f"` {slug} `"


@given(st.text(max_size=200))
def test_no_form_shows_a_hidden_character_and_a_line_has_no_break(text: str) -> None:
    for form in (untrusted.visible, untrusted.line, untrusted.markdown, untrusted.code_span):
        shown = form(text)
        assert not any(_never_shown(c) or untrusted.hidden(c) for c in shown), (form, shown)
        assert not any(c in LINE_BREAKS for c in shown)
    assert not any(_never_shown(c) and c not in "\t\n" for c in untrusted.block(text))


@given(st.text(max_size=200) | st.text(st.characters(max_codepoint=0x7F), max_size=200))
def test_visible_escapes_exactly_the_hidden_characters(text: str) -> None:
    """The printable-ASCII fast path (a 100k-line `tropo blast` shows every id through it)
    gives what the character-by-character definition gives, ASCII controls included."""
    assert untrusted.visible(text) == "".join(f"U+{ord(c):04X}" if untrusted.hidden(c) else c for c in text)


PLAIN = st.text(st.characters(categories=["L", "M", "N", "P", "S"]) | st.just(" "), max_size=60).filter(
    lambda t: not any(untrusted.default_ignorable(c) for c in t))


@given(PLAIN)
def test_plain_printable_text_passes_unchanged(text: str) -> None:
    assert untrusted.visible(text) == untrusted.block(text) == text
    if text == " ".join(text.split()):
        assert untrusted.line(text) == text


@given(st.text(max_size=80))
def test_markdown_form_is_text_only(text: str) -> None:
    """No unescaped ASCII punctuation is left, so nothing starts a heading, list, link,
    image, HTML tag, entity, emphasis, code span or table cell."""
    left = re.sub(r"\\[!-/:-@\[-`{-~]", "", untrusted.markdown(text))
    assert not re.search(r"[!-/:-@\[-`{-~]", left), left
