"""exo: coordination of many agents over one workspace graph (board, conflicts,
claims, roles)."""

__version__ = "0.1.0"
