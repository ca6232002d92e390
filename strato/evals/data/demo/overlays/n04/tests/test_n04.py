"""Task n04: fizzbuzz."""

import unittest

from textkit.numbers import fizzbuzz


class Task(unittest.TestCase):
    def test_fizzbuzz(self) -> None:
        self.assertEqual(fizzbuzz(15), 'FizzBuzz')
        self.assertEqual(fizzbuzz(9), 'Fizz')
        self.assertEqual(fizzbuzz(7), '7')
