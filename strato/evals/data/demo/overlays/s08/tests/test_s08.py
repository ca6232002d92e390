"""Task s08: squeeze_spaces."""

import unittest

from textkit.strings import squeeze_spaces


class Task(unittest.TestCase):
    def test_squeeze_spaces(self) -> None:
        self.assertEqual(squeeze_spaces('  a   b \t c '), 'a b c')
