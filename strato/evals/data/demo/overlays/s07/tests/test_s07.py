"""Task s07: initials."""

import unittest

from textkit.strings import initials


class Task(unittest.TestCase):
    def test_initials(self) -> None:
        self.assertEqual(initials('ada lovelace'), 'AL')
        self.assertEqual(initials(''), '')
