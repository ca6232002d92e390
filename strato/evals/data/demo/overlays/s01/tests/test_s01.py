"""Task s01: is_palindrome."""

import unittest

from textkit.strings import is_palindrome


class Task(unittest.TestCase):
    def test_is_palindrome(self) -> None:
        self.assertTrue(is_palindrome('Never odd or even'))
        self.assertFalse(is_palindrome('abc'))
        self.assertTrue(is_palindrome('Aba'))
