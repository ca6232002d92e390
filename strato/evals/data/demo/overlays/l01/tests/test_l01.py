"""Task l01: chunks."""

import unittest

from textkit.lists import chunks


class Task(unittest.TestCase):
    def test_chunks(self) -> None:
        self.assertEqual(chunks([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])
        self.assertEqual(chunks([], 3), [])
