"""Task n02: is_prime."""

import unittest

from textkit.numbers import is_prime


class Task(unittest.TestCase):
    def test_is_prime(self) -> None:
        self.assertTrue(is_prime(13))
        self.assertFalse(is_prime(1))
        self.assertFalse(is_prime(9))
