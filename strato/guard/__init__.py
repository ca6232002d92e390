"""Guard: registered state machines whose transitions need evidence or a signed override.

Ledgers live in git notes (``refs/notes/vivary/guard``); see ``docs/guard.md``.
"""

from strato.guard.verify import Report, verify_repository

__all__ = ["Report", "verify_repository"]
