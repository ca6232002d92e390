"""Task l07: interleave."""

import unittest

from textkit.lists import interleave


class Task(unittest.TestCase):
    def test_interleave(self) -> None:
        self.assertEqual(interleave([1, 3, 5, 7], [2, 4]), [1, 2, 3, 4, 5, 7])
