"""Task n03: gcd."""

import unittest

from textkit.numbers import gcd


class Task(unittest.TestCase):
    def test_gcd(self) -> None:
        self.assertEqual(gcd(12, 18), 6)
        self.assertEqual(gcd(7, 0), 7)
