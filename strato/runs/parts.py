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

import copy
from collections.abc import Iterable, Iterator
from typing import Any

from strato.runs.engine.table import Table, copy_json, fresh_copy
from tropo.git import chain

TABLE = "fanouts"
MEMBERS: dict[str, type] = {"items": list, "settled": dict, "dispatched": list}
Members = dict[str, Any]  # member name -> its list or dict


_NOTHING = object()  # no part is gone


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


def join(stripped: Any, parts: Iterable[tuple[str, Any]], base: Members | None = None,
         gone: object = _NOTHING) -> Any:
    """The step's entry whole again from its entry and its parts (key, value): lists in
    index order, dicts in key order, as a canonical JSON document decodes. With ``base``,
    its members as last made whole, ``parts`` are only those changed since (``gone``:
    removed): a transition's few, not every item again. PartsError when they do not fit
    together."""
    members: Members = base or {}  # read only: each member is made anew
    lengths: dict[str, Any] = {m: len(v) for m, v in members.items()}
    edits: dict[str, dict[str, Any]] = {}
    for key, value in parts:
        _, member, *rest = key.split("/", 2)
        if rest:
            edits.setdefault(member, {})[rest[0]] = value
        elif value is gone:
            lengths.pop(member, None)
        else:
            lengths[member] = value
    fan = stripped.get("fanout") if isinstance(stripped, dict) else None
    if not isinstance(fan, dict) or not set(lengths) <= MEMBERS.keys() - fan.keys():
        raise PartsError(f"parts of members {sorted(lengths)} do not fit the step's entry")
    for member, elements in edits.items():
        if member not in lengths and any(v is not gone for v in elements.values()):
            raise PartsError(f"member {member!r}: elements without a length")
    fan = dict(fan)
    for member, length in lengths.items():
        if type(length) is not int or length < 0:
            raise PartsError(f"member {member!r}: a length of {length!r}")
        make, was = (_list if MEMBERS[member] is list else _dict), members.get(member, MEMBERS[member]())
        fan[member] = make(member, was, length, edits.get(member, {}), gone)
    return {**stripped, "fanout": dict(sorted(fan.items()))}


_HOLE = object()


def _list(member: str, was: Any, length: int, edits: dict[str, Any], gone: object) -> Any:
    """A list member made whole: ``was`` cut or grown to ``length``, ``edits`` laid in."""
    new = was[:length] + [_HOLE] * (length - len(was))
    for k, value in edits.items():
        i = int(k) if k.isdigit() else -1
        if str(i) != k or (i >= length and value is not gone) or (i < length and value is gone):
            raise PartsError(f"member {member!r}: element {k!r} of {length}")
        if i < length:
            new[i] = value
    if len(was) < length and new.count(_HOLE):
        raise PartsError(f"member {member!r}: its indexes are not 0..{length - 1}")
    return new


def _dict(member: str, was: Any, length: int, edits: dict[str, Any], gone: object) -> Any:
    """A dict member made whole: ``was`` with ``edits``, in key order."""
    new = dict(was)
    for k, value in edits.items():
        if value is gone:
            new.pop(k, None)
        else:
            new[k] = value
    if len(new) != length:
        raise PartsError(f"member {member!r}: {len(new)} elements for a length of {length}")
    return new if edits.keys() <= was.keys() else dict(sorted(new.items()))


def taken(sid: str, value: Any) -> Any:
    """A step's entry taken to be changed: its own copy; a fanout's members track which
    elements were handed out or written (copied when first handed out), so that only
    those are compared when it is written."""
    stripped, members = split(value)
    if not members:
        return copy_json(value)
    copy = copy_json(stripped)
    fan = copy["fanout"]
    for member, value in members.items():
        fan[member] = Elements((sid, member), value) if isinstance(value, list) else \
            Table(value, fresh_copy, None, (sid, member))
    copy["fanout"] = dict(sorted(fan.items()))
    return copy


class Elements(list[Any]):
    """A list member of a taken fanout step: the committed elements until one is handed
    out (by index, slice or iteration) or written, then its private copy. ``touched``:
    the indexes handed out or written; a change of its shape (anything but writing an
    index or appending) marks it ``reshaped``, and then every element is compared."""

    def __init__(self, owner: tuple[str, str], committed: list[Any]) -> None:
        super().__init__(committed)
        self.owner = owner
        self.touched: set[int] = set()
        self.reshaped = False

    def _take(self, index: int) -> None:
        if index not in self.touched:
            self.touched.add(index)
            list.__setitem__(self, index, copy_json(list.__getitem__(self, index)))

    def _take_all(self) -> None:
        for index in range(len(self)):
            self._take(index)

    def __getitem__(self, at: Any) -> Any:
        for index in range(len(self))[at] if isinstance(at, slice) else (range(len(self))[at],):
            self._take(index)
        return list.__getitem__(self, at)

    def __iter__(self) -> Iterator[Any]:
        self._take_all()
        return list.__iter__(self)

    def __reversed__(self) -> Iterator[Any]:
        self._take_all()
        return list.__reversed__(self)

    def __setitem__(self, at: Any, value: Any) -> None:
        if isinstance(at, slice):
            self._take_all()
            self.reshaped = True
        else:
            self.touched.add(range(len(self))[at])
        list.__setitem__(self, at, value)

    def append(self, value: Any) -> None:
        self.touched.add(len(self))
        list.append(self, value)

    def copy(self) -> list[Any]:
        return list(self)

    def __add__(self, other: Any) -> Any:
        return list(self) + other

    def __mul__(self, times: Any) -> Any:
        return list(self) * times

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return copy.deepcopy(list(self), memo)


def _reshaping(name: str) -> Any:
    """A list method that changes the shape: every element is taken first (one it
    returns is then a private copy), and all are compared when written."""
    method = getattr(list, name)

    def reshape(self: Elements, *args: Any, **kwargs: Any) -> Any:
        self._take_all()
        self.reshaped = True
        return method(self, *args, **kwargs)

    reshape.__name__ = name
    return reshape


for _name in ("__delitem__", "__iadd__", "__imul__", "clear", "extend", "insert", "pop", "remove",
              "reverse", "sort"):
    setattr(Elements, _name, _reshaping(_name))


def changed(sid: str, new: Members, old: Members, gone: object, tracked: bool) -> dict[str, Any]:
    """The parts that differ between the committed members ``old`` and ``new``: key ->
    its new element, or ``gone``; exactly those whose JSON differs. When ``tracked``
    (``new`` was taken from ``old``'s commit), a member made by :func:`private` for this
    step is compared where it was touched; any other member element by element."""
    out: dict[str, Any] = {}
    for member in new.keys() | old.keys():
        now, was = new.get(member), old.get(member)
        if now is None:
            out.update((key, gone) for key in entries(sid, {member: was}))
            continue
        if was is None:
            out.update(entries(sid, {member: _plain(now)}))
            continue
        if len(now) != len(was):
            out[f"{sid}/{member}"] = len(now)
        if isinstance(now, list):
            common = min(len(now), len(was))
            keys: Iterable[Any] = range(common)
            if tracked and isinstance(now, Elements) and now.owner == (sid, member) and not now.reshaped:
                keys = [i for i in now.touched if i < common]
            added: Iterable[Any] = range(len(was), len(now))
            removed: Iterable[Any] = range(len(now), len(was))
            get: Any = list.__getitem__
        else:
            own = tracked and isinstance(now, Table) and now.origin == (sid, member)
            held = now.touched if own else now.keys() | was.keys()
            keys = [k for k in held if dict.__contains__(now, k) and k in was]
            added = [k for k in held if dict.__contains__(now, k) and k not in was]
            removed = [k for k in held if not dict.__contains__(now, k) and k in was]
            get = dict.__getitem__
        for k in keys:
            if chain.encode(get(now, k)) != chain.encode(was[k]):
                out[f"{sid}/{member}/{k}"] = get(now, k)
        out.update((f"{sid}/{member}/{k}", get(now, k)) for k in added)
        out.update((f"{sid}/{member}/{k}", gone) for k in removed)
    return out


def _plain(value: Any) -> Any:
    """A member as committed values: its elements without taking them."""
    if isinstance(value, list):
        return [list.__getitem__(value, i) for i in range(len(value))]
    return {k: dict.__getitem__(value, k) for k in dict.keys(value)}
