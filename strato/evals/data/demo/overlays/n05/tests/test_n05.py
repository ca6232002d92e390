"""Task n05: digit_sum."""

import unittest

from textkit.numbers import digit_sum


class Task(unittest.TestCase):
    def test_digit_sum(self) -> None:
        self.assertEqual(digit_sum(1234), 10)
        self.assertEqual(digit_sum(-45), 9)
