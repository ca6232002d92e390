"""Task l08: count_positive."""

import unittest

from textkit.lists import count_positive


class Task(unittest.TestCase):
    def test_count_positive(self) -> None:
        self.assertEqual(count_positive([-1, 0, 2, 3]), 2)
