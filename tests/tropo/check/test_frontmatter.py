from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tropo.check import frontmatter as fm
from tropo.check import scalars, yamlsafe, yamlsubset


def test_split_requires_a_closed_block_at_byte_zero() -> None:
    assert fm.split("---\na: 1\n---\nbody") == ("a: 1", "body")
    assert fm.split("\ufeff---\na: 1\n---\n") == ("a: 1", "")
    assert fm.split("---\na: 1\nno close\n")[0] is None
    assert fm.split(" ---\na: 1\n---\n")[0] is None
    assert fm.split("---\r\na: 1\r\n---\r\nbody") == ("a: 1", "body")


_BLOCK_RE = re.compile(r"---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.S)  # what split means


def _split_by_regex(text: str) -> tuple[str | None, str]:
    text = text.removeprefix("\ufeff")
    m = _BLOCK_RE.match(text) if text.startswith("---") else None
    return (m.group(1), text[m.end():]) if m else (None, text)


@settings(max_examples=2000)
@given(st.sampled_from(["", "---", "---\n", "\ufeff---\n", "--- \t\r\n", "---\r\r\n"]),
       st.lists(st.sampled_from(["---", "-", "\n", "\r", "\r\n", " ", "\t", "a: 1", "#", "# T", "\ufeff"]),
                max_size=16).map("".join))
def test_split_finds_the_block_the_regex_would(opening: str, rest: str) -> None:
    assert fm.split(opening + rest) == _split_by_regex(opening + rest)
    # a parse searches the title where the body starts in the text, not in a copy of it
    assert fm.parse(opening + rest).title == fm.title_of(_split_by_regex(opening + rest)[1])


@pytest.mark.parametrize(
    ("raw", "value"),
    [("", None), ("~", None), ("null", None), ("true", True), ("FALSE", False), ("yes", "yes"),
     ("on", "on"), ("12", 12), ("1_000", 1000), ("1.5", 1.5), ("1e3", 1000.0),
     ("2026-01-02", "2026-01-02"), ("0x10", "0x10"), ("v1.2", "v1.2")],
)
def test_plain_scalars_read_as_vivary_tropo_reads_them(raw: str, value: object) -> None:
    assert scalars.plain_scalar(raw) == value
    assert type(scalars.plain_scalar(raw)) is type(value)


def _tried(raw: str) -> object:
    """vivary-tropo's reading after the keywords: int, else float, else the text."""
    for convert in (int, float):
        try:
            return convert(raw)
        except ValueError:
            pass
    return raw


_numberish = st.text(alphabet=st.sampled_from(list("0123456789+-._eEinfatyINFATY xX٣²½\u0663")), max_size=10)


@settings(max_examples=600)
@given(st.one_of(_numberish, st.text(max_size=8)))
def test_skipping_conversions_that_must_fail_changes_no_value(raw: str) -> None:
    got, want = scalars.plain_scalar(raw), _tried(raw.strip())
    if raw.strip() in ("", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE"):
        return
    assert type(got) is type(want)
    assert got == want or (got != got and want != want)  # nan is not equal to itself


def test_parse_records_fields_lines_and_title() -> None:
    p = fm.parse("---\na: 1\nb: [x, y]\nc:\n  - d\n  - 2026-01-01\ne:\n---\n\n# The Title\n")
    assert p.error is None
    assert p.fields == {"a": 1, "b": ["x", "y"], "c": ["d", "2026-01-01"], "e": None}
    assert p.key_lines == {"a": 2, "b": 3, "c": 4, "e": 7}
    assert p.title == "The Title"


def test_quoted_values_stay_strings_and_keys_stay_names() -> None:
    p = fm.parse('---\ntrue: "12"\n\'n\': \'yes\'\nnested:\n  k: v\n---\n')
    assert p.fields == {"true": "12", "n": "yes", "nested": {"k": "v"}}


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("---\n- a\n- b\n---\n", 2, "mapping"),
        ("---\njust text\n---\n", 2, "key: value"),
        ("---\na: 1\na: 2\n---\n", 3, "duplicate key 'a'"),
        ("---\na: [1, 2\n---\n", 3, "not valid YAML"),
        ("---\na: &x [1]\nb: *x\n---\n", 2, "anchors"),
        ("---\nbase: &b {k: 1}\nc:\n  <<: *b\n---\n", 2, "anchors"),
        ("---\na: !!python/object:os.system echo\n---\n", 2, "tag"),
        ("---\na: !!binary aGk=\n---\n", 2, "tag"),
        ("---\na: {[x]: 1}\n---\n", 2, "scalars"),
        # vivary-tropo's subset refuses these, at these lines; YAML would read them
        ("---\ntags:\n- a\n- b\n---\n", 3, "list item at the mapping's own indentation"),
        ("---\npeople:\n  - name: x\n---\n", 3, "mapping inside a list item"),
        ("---\ntitle: x\nno colon here\nb: 1\n---\n", 3, "not `key: value`"),
        ("---\ntitle: a long\n  wrapped value\n---\n", 3, "indented deeper"),
        ("---\na: 1\nb:\n\t- x\n---\n", 4, "tab"),
    ],
)
def test_bad_frontmatter_is_an_error_with_a_line(text: str, line: int, needle: str) -> None:
    p = fm.parse(text)
    assert p.error is not None
    assert needle in p.error[0]
    assert p.error[1] == line
    assert p.fields == {}


def test_yaml_bomb_is_refused_without_expanding() -> None:
    bomb = "---\n" + "a0: &a0 [x, x]\n" + "".join(
        f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}]\n" for i in range(1, 30)) + "---\n"
    p = fm.parse(bomb)
    assert p.error is not None and "anchors" in p.error[0]


def test_huge_frontmatter_is_refused() -> None:
    big = "---\n" + "".join(f"k{i}: {'v' * 80}\n" for i in range(5000)) + "---\n"
    p = fm.parse(big)
    assert p.error is not None and "larger than" in p.error[0]


def test_deep_nesting_is_refused() -> None:
    p = fm.parse("---\na: " + "[" * 200 + "]" * 200 + "\n---\n")
    assert p.error is not None


# The fast path must read exactly what PyYAML reads, for every input it accepts.
_word = st.text(string.ascii_letters + string.digits + "_-./ ", min_size=1, max_size=12)
_key = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
# Quoted scalars of any text, hostile characters included (escapes, quotes, colons, line
# breaks, control and format characters; no lone surrogate, which UTF-8 text never holds):
# the fast path must read or decline each exactly.
_quoted = st.tuples(st.sampled_from("\"'"), st.text(
    st.one_of(st.sampled_from(list("ab 12:#'\"\\\x85\u2028\ufeff\x07\xa0é日")), st.characters(blacklist_categories=("Cs",))),
    max_size=10)).map(lambda qt: f"{qt[0]}{qt[1]}{qt[0]}")
_line = st.one_of(
    st.tuples(_key, _word).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.tuples(_key, st.lists(_word, max_size=4)).map(
        lambda kv: f"{kv[0]}: [{', '.join(kv[1])}]"),
    st.tuples(_key, st.lists(_word, min_size=1, max_size=3)).map(
        lambda kv: kv[0] + ":\n" + "".join(f"  - {w}\n" for w in kv[1]).rstrip("\n")),
    st.tuples(_key, st.sampled_from(["", "~", "true", "12", "1.5", "2026-01-01", "null"])).map(
        lambda kv: f"{kv[0]}: {kv[1]}".rstrip()),
    st.tuples(_key, _quoted).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.tuples(_key, st.text(string.ascii_letters + "0: ", min_size=1, max_size=12)).map(
        lambda kv: f"{kv[0]}: {kv[1]}"),  # colons in a value: text, or a nested mapping
    st.tuples(_key, st.lists(_quoted, min_size=1, max_size=3)).map(
        lambda kv: kv[0] + ":\n" + "".join(f"  - {w}\n" for w in kv[1]).rstrip("\n")),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_line, max_size=8))
def test_fast_path_agrees_with_pyyaml(lines: list[str]) -> None:
    block = "\n".join(lines)
    fast = fm._fast(block)
    try:
        slow = yamlsafe.load(block)
    except scalars.FrontmatterError:
        slow = None
    if fast is not None:
        assert slow is not None, block
        assert fast == slow or repr(fast) == repr(slow), block  # NaN != NaN, same value


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_line, _line.map(lambda line: line.replace("  - ", "- "))), max_size=8))
def test_fast_path_accepts_only_what_the_subset_accepts(lines: list[str]) -> None:
    """The fast path skips the subset's rules, so it must decline whatever they refuse."""
    block = "\n".join(lines)
    if fm._fast(block) is not None:
        assert yamlsubset.refusal(block) is None, block


def test_fast_path_declines_what_it_cannot_read_exactly() -> None:
    for block in ["a: 'it''s'", 'a: "x\\ty"', 'a:\n  - "k: v"', "a: 'x' # c", "a: b:", "a: b: c:d", "a: x # c", "a: {b: 1}", "a: -1", "a: b: c",
                  "a: @x", "a: |\n  text", "a:\n- x", "a: 1\n\t"]:
        assert fm._fast(block) is None, block


def test_fast_path_reads_nested_blocks_and_comment_lines() -> None:
    block = ("# a note\nowner: ops\nbudget:\n  cpu: 4\n  # inside\n  regions:\n    - eu\n    - 'ap:1'\n"
             "notes: \"cause: x #1\"\nrefs:\n    - a\n    - \"https://x.invalid/#y\"\nempty:\nlast: 1")
    fields, lines = {"owner": "ops", "budget": {"cpu": 4, "regions": ["eu", "ap:1"]}, "notes": "cause: x #1",
                     "refs": ["a", "https://x.invalid/#y"], "empty": None, "last": 1}, \
        {"owner": 3, "budget": 4, "notes": 10, "refs": 11, "empty": 14, "last": 15}
    assert fm._fast(block) == (fields, lines) == yamlsafe.load(block)
    for declined in ["a:\n  b: 1\n c: 2", "a:\n  - x\n  b: 1", "a:\n  b:\n  - x", "a: 1\n  b: 2",
                     "a:\n  - x\n    - y", "a:\n  b: 1\n  b: 2", "  a: 1", "a:\n  - 'k: v'"]:
        assert fm._fast(declined) is None, declined


# Blocks of nested mappings and lists at any indentation, comment lines anywhere, and
# lines a little off (an item at its key's indentation, a dedent between two levels):
# whatever the fast path reads, the subset accepts and PyYAML reads the same.
_piece = st.one_of(_key.map(lambda k: f"{k}:"), _line.filter(lambda line: "\n" not in line),
                   _word.map(lambda w: f"- {w}"), _quoted.map(lambda q: f"- {q}"),
                   st.sampled_from(["# c", "#", "- - x", "- a: b", "-", "? k", "- [a]"]))
_indented = st.tuples(st.sampled_from([0, 0, 1, 2, 2, 3, 4, 4, 6, 8]), _piece).map(lambda ip: " " * ip[0] + ip[1])


def _tree(depth: int) -> st.SearchStrategy[list[str]]:
    """The lines of a mapping whose values may be scalars, lists or mappings."""
    leaf = st.one_of(_line.map(lambda line: line.split("\n")), st.just(["# note"]))
    if depth == 0:
        return st.lists(leaf, max_size=4).map(lambda parts: [x for p in parts for x in p])
    step = st.sampled_from([1, 2, 4])
    nested = st.tuples(_key, step, _tree(depth - 1)).map(
        lambda kst: [f"{kst[0]}:", *(" " * kst[1] + x for x in kst[2])])
    listed = st.tuples(_key, step, st.lists(st.one_of(_word, _quoted), min_size=1, max_size=3)).map(
        lambda ksl: [f"{ksl[0]}:", *(" " * ksl[1] + f"- {w}" for w in ksl[2])])
    return st.lists(st.one_of(leaf, nested, listed), max_size=4).map(lambda parts: [x for p in parts for x in p])


@settings(max_examples=600, deadline=None)
@given(st.one_of(_tree(3), st.lists(_indented, max_size=10)))
def test_fast_path_reads_nested_blocks_as_the_subset_and_pyyaml_do(lines: list[str]) -> None:
    block = "\n".join(lines)
    fast = fm._fast(block)
    if fast is None:
        return
    assert yamlsubset.refusal(block) is None, block
    slow = yamlsafe.load(block)
    assert fast == slow or repr(fast) == repr(slow), block


_yamlish = st.text(alphabet=st.sampled_from(list("ab:- []{}&*!|>'\"#\n\t ,?%@`~01.\\x")), max_size=120)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_yamlish, st.text(max_size=200)))
def test_parse_never_raises_on_hostile_frontmatter(block: str) -> None:
    p = fm.parse(f"---\n{block}\n---\n# t\n")
    assert isinstance(p.fields, dict)
    if p.error is not None:
        assert p.fields == {} and p.error[1] >= 2
    assert all(isinstance(k, str) for k in p.fields)


@settings(max_examples=800, deadline=None)
@given(st.tuples(st.sampled_from(["", " ", "  ", "    "]), st.sampled_from(["- ", "k: ", "k:  ", "a.b-c: "]),
                 st.text(st.sampled_from(list("ab0:- #'\"[],\x0c\x85é")), max_size=8),
                 st.sampled_from(["", " ", "  "])).map("".join))
def test_one_match_lines_read_as_the_general_reading_does(line: str) -> None:
    """The one-regex readings of ``key: plain`` and ``- plain`` lines are shortcuts:
    the general reading, with them taken out, gives every line the same meaning."""
    whole, general = fm._line(line), fm._general_line(line)
    assert whole == general or repr(whole) == repr(general), line
