"""Field specs: a check that remembers what it found (``ref-list``'s known slugs) says
what the plain per-value check says, whatever came before."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tropo.check import fields

_item = st.one_of(st.sampled_from(["jeff", "ann", "a.b_c-1", "Jeff", "-x", "ann\n", "é", ""]),
                  st.text(max_size=6), st.integers(), st.booleans(), st.none(),
                  st.lists(st.just("jeff"), max_size=2), st.dictionaries(st.just("k"), st.just("v")))
_value = st.one_of(st.lists(_item, max_size=5), _item)


@given(st.lists(_value, max_size=30))
def test_a_ref_list_check_says_what_the_plain_check_says(values: list[Any]) -> None:
    check = fields._ref_list()
    for value in values + values:  # seen twice: the second time from what it remembers
        assert check(value) == fields._problem(value, "ref-list"), value


def test_the_known_slugs_are_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(fields, "_SLUGS_KEPT", 3)
    check = fields._ref_list()
    for n in range(10):
        assert check([f"id-{n}", "jeff"]) is None
    assert check(["jeff", "Not A Slug"]) == fields._problem(["jeff", "Not A Slug"], "ref-list")
