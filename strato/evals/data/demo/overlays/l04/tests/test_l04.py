"""Task l04: last."""

import unittest

from textkit.lists import last


class Task(unittest.TestCase):
    def test_last(self) -> None:
        self.assertEqual(last([1, 2, 3]), 3)
        self.assertEqual(last([], 9), 9)
