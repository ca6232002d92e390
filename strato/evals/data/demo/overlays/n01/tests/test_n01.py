"""Task n01: clamp."""

import unittest

from textkit.numbers import clamp


class Task(unittest.TestCase):
    def test_clamp(self) -> None:
        self.assertEqual(clamp(5, 0, 3), 3)
        self.assertEqual(clamp(-1, 0, 3), 0)
        self.assertEqual(clamp(2, 0, 3), 2)
