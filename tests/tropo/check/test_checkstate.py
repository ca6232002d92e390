"""The compact check state: patching it equals building it anew."""

from __future__ import annotations

import random
from dataclasses import astuple

from hypothesis import given, settings
from hypothesis import strategies as st

from tropo.check.checkstate import CheckState, DocRow, FindingRow
from tropo.check.workspace import walk_key

IDS = ["a", "b", "c", "hub"]
_rel = st.sampled_from(["a.md", "x/a.md", "x/b.md", "x/y/c.md", "b.md", "hub.md", "z/hub.md"])
_row = st.tuples(
    st.sampled_from([*IDS, None]),
    st.lists(st.tuples(st.just("?"), st.integers(0, 9), st.just("error"), st.just("E101"), st.just("m")),
             max_size=2),
    st.lists(st.tuples(st.sampled_from(["owner", "related"]), st.sampled_from([*IDS, "ghost"]),
                       st.integers(1, 9)), max_size=3),
)
_docs = st.dictionaries(_rel, _row, max_size=6)
_links = st.dictionaries(_rel, st.just(("?", 0, "warning", "W230", "link")), max_size=2)


def _state(docs: dict[str, DocRow], extra: dict[str, FindingRow]) -> CheckState:
    ordered = dict(sorted(docs.items(), key=lambda kv: walk_key(kv[0])))
    links = dict(sorted(extra.items(), key=lambda kv: walk_key(kv[0])))
    return CheckState.build((), True, {"tropo.toml": b"x"}, ordered, links)


def _answer(state: CheckState) -> tuple[object, ...]:
    s = state.summary("ws")
    return s.checked, s.clean, [astuple(f) for f in s.findings]


@settings(max_examples=300)
@given(_docs, _links, _docs, _links, st.lists(_rel, max_size=4), st.randoms())
def test_patching_equals_building_anew(before: dict[str, DocRow], before_links: dict[str, FindingRow],
                                       new: dict[str, DocRow], new_links: dict[str, FindingRow],
                                       gone: list[str], rng: random.Random) -> None:
    new_links = {rel: row for rel, row in new_links.items() if rel not in new}
    touched = {*gone, *new, *new_links}
    after = {rel: row for rel, row in before.items() if rel not in touched} | new
    after_links = {rel: row for rel, row in before_links.items() if rel not in touched} | new_links
    after_links = {rel: row for rel, row in after_links.items() if rel not in after}
    before_links = {rel: row for rel, row in before_links.items() if rel not in before}
    shuffled = list(touched)
    rng.shuffle(shuffled)
    patched = _state(before, before_links).patched(shuffled, new, new_links, walk_key)
    assert _answer(patched) == _answer(_state(after, after_links))
    assert patched.configs == {"tropo.toml": b"x"} and patched.strict


def test_cross_findings_name_broken_refs_and_later_duplicates() -> None:
    state = _state({"a.md": ("a", [], [("owner", "ghost", 3), ("owner", "b", 4)]),
                    "x/a.md": ("a", [], []), "b.md": ("b", [], [])}, {})
    findings = [astuple(f) for f in state.summary("ws").findings]
    assert findings == [
        ("a.md", 3, "warning", "W220", "field 'owner': ref 'ghost' matches no document id"),
        ("x/a.md", 1, "error", "E130", "duplicate id 'a': a.md has it already"),
    ]
    assert state.summary("ws").clean == 1


def test_a_record_round_trips_and_anything_else_is_refused() -> None:
    state = _state({"a.md": ("a", [("a.md", 1, "error", "E101", "m")], [("owner", "b", 2)])},
                   {"l.md": ("l.md", 0, "warning", "W230", "link")})
    again = CheckState.from_record(state.to_record())
    assert again is not None and _answer(again) == _answer(state)
    for bad in (None, "dated", (1, 2), state.to_record()[:-1], (*state.to_record()[:6], b"\x00", *state.to_record()[7:])):
        assert CheckState.from_record(bad) is None
