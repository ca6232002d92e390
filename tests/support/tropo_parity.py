"""Our side and the oracle's side of a parity test, run at the same time: each side is a
process of its own (a driver over many cases), so neither waits for the other to finish."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")


def side_by_side(ours: Callable[[], A], theirs: Callable[[], B]) -> tuple[A, B]:
    """(ours(), theirs()), the two started together; either one's exception is raised."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        mine, suite = pool.submit(ours), pool.submit(theirs)
        return mine.result(), suite.result()
