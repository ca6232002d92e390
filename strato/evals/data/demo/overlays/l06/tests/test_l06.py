"""Task l06: rotate."""

import unittest

from textkit.lists import rotate


class Task(unittest.TestCase):
    def test_rotate(self) -> None:
        self.assertEqual(rotate([1, 2, 3], 1), [2, 3, 1])
        self.assertEqual(rotate([1, 2, 3], 4), [2, 3, 1])
        self.assertEqual(rotate([], 2), [])
