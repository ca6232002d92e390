"""Transitional: tests/strato imports these from here until it imports tests.support.terminal;
then this file goes."""

from tests.support.terminal import BIN, on_terminal

__all__ = ["BIN", "on_terminal"]
