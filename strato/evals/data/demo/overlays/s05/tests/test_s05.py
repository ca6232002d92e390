"""Task s05: snake_to_camel."""

import unittest

from textkit.strings import snake_to_camel


class Task(unittest.TestCase):
    def test_snake_to_camel(self) -> None:
        self.assertEqual(snake_to_camel('snake_case_name'), 'snakeCaseName')
        self.assertEqual(snake_to_camel('x'), 'x')
