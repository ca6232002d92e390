"""A fanout step's members that grow with its items (`items`, `settled`, `dispatched`),
laid out as entries of their own in a run's tree (layout format 3, private to the run
store): an item's transition writes the few small entries it changed, not the step's
whole entry, which at 1,000 items is a 200 KB blob encoded, written, pushed and fetched
again for every transition. Every reader still gets the step as one value.

    <step>/<member>        the member's length
    <step>/<member>/<k>    its element k: a list's index, a dict's key

A step id is `[a-z][a-z0-9_-]*`, so the first two slashes split a key.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable
from typing import Any

from tropo.git import chain

TABLE = "fanouts"
MEMBERS: dict[str, type] = {"items": list, "settled": dict, "dispatched": list}
Members = dict[str, Any]  # member name -> its list or dict


class PartsError(ValueError):
    """A step's parts that do not make its members whole again."""


def split(value: Any) -> tuple[Any, Members]:
    """A step's entry without the members kept apart, and those members (none: a step
    that is not a fanout, stored whole as before)."""
    fan = value.get("fanout") if isinstance(value, dict) else None
    if not isinstance(fan, dict):
        return value, {}
    members = {m: fan[m] for m, kind in MEMBERS.items() if isinstance(fan.get(m), kind)}
    if not members:
        return value, {}
    return {**value, "fanout": {k: v for k, v in fan.items() if k not in members}}, members


def entries(sid: str, members: Members) -> dict[str, Any]:
    """Every part of ``members``, by key."""
    out: dict[str, Any] = {}
    for member, value in members.items():
        out[f"{sid}/{member}"] = len(value)
        pairs = enumerate(value) if isinstance(value, list) else value.items()
        out.update((f"{sid}/{member}/{k}", element) for k, element in pairs)
    return out


def join(stripped: Any, parts: Iterable[tuple[str, Any]]) -> Any:
    """The step's entry whole again from its entry and its parts (key, value): lists in
    index order, dicts in key order, as a canonical JSON document decodes. PartsError
    when they do not fit together."""
    lengths: dict[str, Any] = {}
    found: dict[str, dict[str, Any]] = {}
    for key, value in parts:
        _, member, *rest = key.split("/", 2)
        if rest:
            found.setdefault(member, {})[rest[0]] = value
        else:
            lengths[member] = value
    fan = stripped.get("fanout") if isinstance(stripped, dict) else None
    if not isinstance(fan, dict) or not set(found) <= set(lengths) or not set(lengths) <= MEMBERS.keys():
        raise PartsError(f"parts of members {sorted(lengths)} do not fit the step's entry")
    fan = dict(fan)
    for member, length in lengths.items():
        got = found.get(member, {})
        if type(length) is not int or len(got) != length or member in fan:
            raise PartsError(f"member {member!r}: {len(got)} parts for a length of {length!r}")
        if MEMBERS[member] is list:
            if any(str(i) not in got for i in range(length)):
                raise PartsError(f"member {member!r}: its indexes are not 0..{length - 1}")
            fan[member] = [got[str(i)] for i in range(length)]
        else:
            fan[member] = {k: got[k] for k in sorted(got)}
    return {**stripped, "fanout": dict(sorted(fan.items()))}


def changed(sid: str, new: Members, old: Members, gone: object) -> dict[str, Any]:
    """The parts that differ between the committed members ``old`` and ``new``: key ->
    its new element, or ``gone``. Exactly those whose JSON differs: elements are compared
    with ``==`` (C speed), and the ones found equal are confirmed as a whole by their
    marshal bytes, which tell 1 from 1.0 and True; if those differ, each is compared by
    its JSON."""
    out: dict[str, Any] = {}
    for member in new.keys() | old.keys():
        now, was = new.get(member), old.get(member)
        if now is None:
            out.update((key, gone) for key in entries(sid, {member: was}))
            continue
        if was is None:
            out.update(entries(sid, {member: now}))
            continue
        if len(now) != len(was):
            out[f"{sid}/{member}"] = len(now)
        if isinstance(now, list):
            differ = _differ(range(min(len(now), len(was))), now, was)
            added: Iterable[Any] = range(len(was), len(now))
            removed: Iterable[Any] = range(len(now), len(was))
        else:
            differ = _differ([k for k in now if k in was], now, was)
            added, removed = [k for k in now if k not in was], [k for k in was if k not in now]
        out.update((f"{sid}/{member}/{k}", now[k]) for k in (*differ, *added))
        out.update((f"{sid}/{member}/{k}", gone) for k in removed)
    return out


def _differ(keys: Iterable[Any], now: Any, was: Any) -> list[Any]:
    """Those of ``keys`` whose elements in ``now`` and ``was`` are not the same JSON."""
    same: list[Any] = []
    differ: list[Any] = []
    for k in keys:
        (same if now[k] == was[k] else differ).append(k)
    if marshal.dumps([now[k] for k in same], 2) != marshal.dumps([was[k] for k in same], 2):
        differ += [k for k in same if chain.encode(now[k]) != chain.encode(was[k])]
    return differ

