"""The claim ledger against an adversary who writes every byte of the state and the
request: forged holders, swapped ids, overlapping grants and foreign releases fail."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from exo.control import ledger, scope
from tests.support.control_requests import ledger_of

NOW = "2026-01-01T00:00:00Z"
seeds = st.integers(min_value=0, max_value=10_000)
actors = st.fixed_dictionaries({"kind": st.sampled_from(["agent", "human", "worker"]),
                                "id": st.sampled_from(["ann", "bob", "bot"])})
paths = st.lists(st.sampled_from(["src", "src/a", "docs", "C:\\src", "c:/SRC/b", "/abs",
                                  "./src/../docs/x", "."]), min_size=1, max_size=3)


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Brute force: some path of one is a segment prefix of some path of the other."""
    for x in scope.keys(a):
        for y in scope.keys(b):
            short, long = sorted((x, y), key=lambda k: len(k[3]))
            if short[:3] == long[:3] and long[3][: len(short[3])] == short[3]:
                return True
    return False


@settings(max_examples=150, deadline=None)
@given(seeds, actors, paths, st.sampled_from(["p", "q"]))
def test_a_grant_never_overlaps_the_ledger(seed: int, actor: dict[str, str], wanted: list[str],
                                           project: str) -> None:
    claims = ledger_of(random.Random(seed), 4)
    result = ledger.request_claim(claims, {"scope": {"project": project, "paths": wanted},
                                           "actor": actor, "now": NOW})
    target = scope.normalize({"project": project, "paths": wanted})
    clashes = [c for c in claims if _overlap(target, c["scope"])]
    assert (result["decision"] == "granted") == (not clashes)
    assert [c["claim_id"] for c in result["conflicts"]] == [c["claim_id"] for c in clashes]


@settings(max_examples=150, deadline=None)
@given(seeds, st.sampled_from(sorted(ledger.FIELDS - {"claim_id"})), actors)
def test_an_edited_claim_is_refused_whole(seed: int, field: str, forger: dict[str, str]) -> None:
    claims = ledger_of(random.Random(seed), 3)
    if not claims:
        return
    victim = dict(claims[0])
    victim[field] = {"actor": forger, "scope": {"project": "p", "paths": ["elsewhere"]},
                     "authority_class": "owner", "lease": None, "status": "released",
                     "created_at": "2025-01-01T00:00:00Z"}[field]
    if victim[field] == claims[0][field]:
        return
    forged = [victim, *claims[1:]]
    assert ledger.ledger_code(forged) == "unknown_claim_shape"
    assert ledger.release_claim(forged, victim["claim_id"], forger)["decision"] == "refused"


@settings(max_examples=100, deadline=None)
@given(seeds, actors)
def test_only_the_holder_releases(seed: int, asker: dict[str, str]) -> None:
    claims = ledger_of(random.Random(seed), 3)
    if not claims:
        return
    held = claims[-1]
    result = ledger.release_claim(claims, held["claim_id"], asker)
    assert (result["decision"] == "released") == (asker == held["actor"])
    if result["decision"] == "refused":
        assert result["claims"] == claims


def test_two_ledger_claims_that_overlap_refuse_every_operation() -> None:
    first = ledger.request_claim([], {"scope": {"project": "p", "paths": ["src"]},
                                      "actor": {"kind": "agent", "id": "a"}, "now": NOW})
    second = ledger.request_claim([], {"scope": {"project": "p", "paths": ["src/x"]},
                                       "actor": {"kind": "agent", "id": "b"}, "now": NOW})
    both = [first["claim"], second["claim"]]
    assert ledger.ledger_code(both) == "claim_ledger_scope_conflict"
    assert ledger.expire_leases(both, NOW)["reason_codes"] == ["claim_ledger_scope_conflict"]
