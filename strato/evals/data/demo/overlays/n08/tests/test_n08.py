"""Task n08: percent."""

import unittest

from textkit.numbers import percent


class Task(unittest.TestCase):
    def test_percent(self) -> None:
        self.assertEqual(percent(1, 3), 33.3)
        self.assertEqual(percent(5, 0), 0.0)
