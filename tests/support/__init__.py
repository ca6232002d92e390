"""Helpers the tests share: importable by any test, never a test module themselves."""
