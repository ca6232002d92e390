"""A progress line on a terminal for work that reads every document.

A first check of a large workspace (or the first after an upgrade) reads every file and
can take a while; a person at a terminal should see it move. The line goes to stderr,
only when stderr is a terminal and only once the work has run longer than a second
(``VIVARY_PROGRESS_DELAY`` seconds), so pipes, hooks' logs and agents read nothing new.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

DELAY_ENV = "VIVARY_PROGRESS_DELAY"
_EVERY = 0.1  # seconds between redraws


def _delay() -> float:
    try:
        return max(0.0, float(os.environ.get(DELAY_ENV, "1")))
    except ValueError:
        return 1.0


class Progress:
    """``advance()`` once per item; ``close()`` erases the line it drew, if any."""

    def __init__(self, total: int, what: str, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.what, self.done = total, what, 0
        self.active = _isatty(self.stream)
        self.next = time.monotonic() + _delay()
        self.drawn = False

    def advance(self) -> None:
        self.done += 1
        if self.active and (self.done % 64 == 0 or self.done == self.total):
            self._draw_if_due()

    def _draw_if_due(self) -> None:
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + _EVERY
        self.stream.write(f"\rtropo: {self.done}/{self.total} {self.what}")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
