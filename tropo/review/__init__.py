"""Retrieval and review over a checked workspace: search, diff, history, map, view."""
