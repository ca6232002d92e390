"""Task n06: mean."""

import unittest

from textkit.numbers import mean


class Task(unittest.TestCase):
    def test_mean(self) -> None:
        self.assertEqual(mean([1, 2, 3]), 2)
        self.assertEqual(mean([]), 0.0)
        self.assertEqual(mean([4]), 4)
