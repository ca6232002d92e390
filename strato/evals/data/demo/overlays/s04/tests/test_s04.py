"""Task s04: reverse_words."""

import unittest

from textkit.strings import reverse_words


class Task(unittest.TestCase):
    def test_reverse_words(self) -> None:
        self.assertEqual(reverse_words('one two  three'), 'three two one')
