"""Task s02: count_vowels."""

import unittest

from textkit.strings import count_vowels


class Task(unittest.TestCase):
    def test_count_vowels(self) -> None:
        self.assertEqual(count_vowels('Banana'), 3)
        self.assertEqual(count_vowels('AEIOU xyz'), 5)
