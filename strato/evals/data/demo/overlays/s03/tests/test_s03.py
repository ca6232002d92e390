"""Task s03: truncate."""

import unittest

from textkit.strings import truncate


class Task(unittest.TestCase):
    def test_truncate(self) -> None:
        self.assertEqual(truncate('hello', 5), 'hello')
        self.assertEqual(truncate('hello world', 5), 'hell…')
