"""Task l02: flatten."""

import unittest

from textkit.lists import flatten


class Task(unittest.TestCase):
    def test_flatten(self) -> None:
        self.assertEqual(flatten([[1, 2], [], [3]]), [1, 2, 3])
