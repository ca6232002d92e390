"""Task s06: pad_left."""

import unittest

from textkit.strings import pad_left


class Task(unittest.TestCase):
    def test_pad_left(self) -> None:
        self.assertEqual(pad_left('7', 3, '0'), '007')
        self.assertEqual(pad_left('long', 2), 'long')
