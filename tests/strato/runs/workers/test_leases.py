"""Leases are bytes anyone who may push chose, and a claim's expiry is judged by commit
order and the observer's own clock: a lease that says it expired long ago (a clock hours
behind) is not taken over on sight, and one that says it lives for days (a clock hours
ahead, or a liar) expires after its ttl without a renewal all the same."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from strato.runs.workers import leases


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_claim_expires_only_after_its_ttl_of_the_observers_own_time_without_a_new_commit() -> None:
    clock = Clock()
    watch = leases.Watch(clock)
    skewed_behind = leases.parse(json.dumps({"worker": "w", "machine": "m", "state": "held", "ttlS": 10,
                                             "expiresAt": "1999-01-01T00:00:00Z"}).encode())
    assert not watch.expired("ref", "c1", skewed_behind)  # first sight: never expired
    clock.now += 9.9
    assert not watch.expired("ref", "c1", skewed_behind)
    clock.now += 0.2
    assert watch.expired("ref", "c1", skewed_behind)
    clock.now += 0.1
    assert not watch.expired("ref", "c2", skewed_behind)  # a renewal landed: a new commit starts over
    skewed_ahead = leases.parse(json.dumps({"state": "held", "ttlS": 10, "expiresAt": "2999-01-01T00:00:00Z"}).encode())
    clock.now += 10
    assert watch.expired("ref", "c2", skewed_ahead)


def test_a_finished_or_released_claim_is_not_a_held_one() -> None:
    watch = leases.Watch(Clock())
    for state in ("done", "released"):
        lease = leases.parse(json.dumps({"state": state, "ttlS": 1}).encode())
        assert lease.state == state and not watch.expired("r", "c", lease)


@given(st.one_of(st.binary(max_size=200), st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=20).map(lambda doc: json.dumps(doc).encode())))
def test_any_bytes_read_as_a_lease_give_a_held_or_known_state_and_a_bounded_ttl(raw: bytes) -> None:
    lease = leases.parse(raw)
    assert lease.state in (leases.HELD, leases.DONE, leases.RELEASED)
    assert leases.MIN_TTL_S <= lease.ttl_s <= leases.MAX_TTL_S
    assert isinstance(lease.worker, str) and len(lease.worker) <= 200


@given(st.dictionaries(st.sampled_from(["ttlS", "state", "worker", "machine"]),
                       st.one_of(st.floats(allow_nan=True), st.integers(-10**12, 10**12), st.text(max_size=5),
                                 st.booleans(), st.none())))
def test_a_hostile_ttl_never_makes_a_claim_live_past_the_cap_or_expire_at_once(doc: dict[str, object]) -> None:
    lease = leases.parse(json.dumps(doc).encode())
    clock = Clock()
    watch = leases.Watch(clock)
    assert not watch.expired("r", "c", lease)
    clock.now += leases.MAX_TTL_S
    assert watch.expired("r", "c", lease) == (lease.state == leases.HELD)


def test_claim_keys_name_one_hand_out_and_never_collide_with_a_subflows_step() -> None:
    assert leases.claim_key("draft", 1) == "draft.g1"
    assert leases.claim_key("sub/a", 3) == "sub.a.g3"
    assert leases.claim_key("sub", 1) != leases.claim_key("sub/a", 1)
