"""The tables of a run's state that grow with the run (its root steps, its dispatches,
their generations), kept so that one operation costs what it changes, not what the run
holds: the store writes back only the entries an operation took, and the engine finds
the steps in a status without walking every step.

To every reader a table is the plain dict it stands for (equal to it, encoded to the
same JSON, copied to a plain dict). An entry an operation takes (``t[k]``, ``get``,
``items``, ``values``, a write) is marked touched and, the first time, replaced by a
fresh copy of its committed value, so one snapshot's change never shows in another
snapshot of the same commit. :meth:`Table.peek` reads an entry without taking it, for
reading only: the engine's passes look at many steps' statuses and change only the steps
they take.
"""

from __future__ import annotations

import copy
import marshal
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Fresh = Callable[[str, Any], Any]  # a committed entry (key, value) -> a private copy of it
LIVE = ("ready", "running", "waiting_gate")  # the statuses few steps are in at once


@dataclass(frozen=True)
class StatusIndex:
    """A table of steps at its commit: how many steps were in each status, and which
    steps were in each of the :data:`LIVE` statuses."""

    counts: Mapping[str, int]
    live: Mapping[str, frozenset[str]]


class Table(dict[str, Any]):
    """A dict that knows which entries were taken since it was made (``touched``)."""

    def __init__(
        self,
        entries: Mapping[str, Any] | None = None,
        fresh: Fresh | None = None,
        index: StatusIndex | None = None,
        origin: object = None,
    ) -> None:
        """``entries``: the committed values (shared, read only through :meth:`peek`);
        ``fresh``: a private copy of one of them; ``index``: for a table of steps, how
        many were in each status at the commit and which were live; ``origin``: what
        the committed values came from (the store compares it, never reads it)."""
        super().__init__(entries or {})
        self.touched: set[str] = set()
        self.origin = origin
        self._fresh = fresh
        self._index = index
        self._was: dict[str, Any] = {}  # a taken step's status at the commit

    def _mark(self, key: str) -> bool:
        """Mark ``key`` touched; True the first time (its status at the commit noted)."""
        if key in self.touched:
            return False
        self.touched.add(key)
        if self._index is not None:
            old = dict.get(self, key)
            self._was[key] = old.get("status") if isinstance(old, dict) else None
        return True

    def _take(self, key: str) -> None:
        if self._mark(key) and self._fresh is not None and dict.__contains__(self, key):
            dict.__setitem__(self, key, self._fresh(key, dict.__getitem__(self, key)))

    def _take_all(self) -> None:
        for key in list(dict.keys(self)):
            self._take(key)

    def peek(self, key: str) -> Any:
        """An entry to read, not to change (KeyError when absent)."""
        return dict.__getitem__(self, key)

    def having(self, statuses: Collection[str]) -> set[str] | None:
        """The keys of the steps whose status is one of ``statuses`` now, all of them
        live statuses (None: this table does not know without reading every step)."""
        if self._index is None or not all(s in self._index.live for s in statuses):
            return None
        keys = {k for s in statuses for k in self._index.live[s]} - self.touched
        return keys | {k for k in self.touched if self._status(k) in statuses}

    def count(self, statuses: Collection[str]) -> int | None:
        """How many steps have one of ``statuses`` now (None: not known here)."""
        if self._index is None:
            return None
        n = sum(self._index.counts.get(s, 0) for s in statuses)
        n -= sum(1 for k in self.touched if self._was.get(k) in statuses)
        return n + sum(1 for k in self.touched if self._status(k) in statuses)

    def _status(self, key: str) -> Any:
        value = dict.get(self, key)
        return value.get("status") if isinstance(value, dict) else None

    def __getitem__(self, key: str) -> Any:
        self._take(key)
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        self._take(key)
        return dict.get(self, key, default)

    def __setitem__(self, key: str, value: Any) -> None:
        self._mark(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._mark(key)
        dict.__delitem__(self, key)

    def pop(self, key: str, *default: Any) -> Any:
        self._mark(key)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        key, value = dict.popitem(self)
        self._take(key)
        return key, value

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._take(key)
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    # `table |= other` must mark what it writes as `update` does; mypy holds an in-place
    # `|` that returns the Table against dict's `|`, which returns a plain dict
    def __ior__(self, other: Any) -> Table:  # type: ignore[override,misc]
        self.update(other)
        return self

    def clear(self) -> None:
        for key in list(dict.keys(self)):
            self._mark(key)
        dict.clear(self)

    def items(self) -> Any:
        self._take_all()
        return dict.items(self)

    def values(self) -> Any:
        self._take_all()
        return dict.values(self)

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    def __copy__(self) -> dict[str, Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(self.copy(), memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.copy(),))


def copy_json(value: Any) -> Any:
    """A private copy of a JSON value (marshal copies plain dicts, lists, strings and
    numbers exactly, in about half the time of a JSON round trip; the bytes never leave
    this process)."""
    return marshal.loads(marshal.dumps(value))


def fresh_copy(key: str, value: Any) -> Any:
    """A table's private copy of an entry: :func:`copy_json` of it, whatever its key."""
    return copy_json(value)


def peek(table: Mapping[str, Any], key: str) -> Any:
    """An entry of a table or of a plain dict, to read only."""
    return table.peek(key) if isinstance(table, Table) else table[key]


def ordered(keys: Iterable[str], order: Mapping[str, int]) -> list[str]:
    """``keys`` in declaration order (``order``: key -> position)."""
    return sorted(keys, key=order.__getitem__)
