"""Task n07: factorial."""

import unittest

from textkit.numbers import factorial


class Task(unittest.TestCase):
    def test_factorial(self) -> None:
        self.assertEqual(factorial(0), 1)
        self.assertEqual(factorial(5), 120)
