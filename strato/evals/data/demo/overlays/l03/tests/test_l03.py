"""Task l03: dedupe."""

import unittest

from textkit.lists import dedupe


class Task(unittest.TestCase):
    def test_dedupe(self) -> None:
        self.assertEqual(dedupe([3, 1, 3, 2, 1]), [3, 1, 2])
