"""Task l05: window_sums."""

import unittest

from textkit.lists import window_sums


class Task(unittest.TestCase):
    def test_window_sums(self) -> None:
        self.assertEqual(window_sums([1, 2, 3, 4], 2), [3, 5, 7])
        self.assertEqual(window_sums([5], 1), [5])
