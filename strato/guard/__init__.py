"""Guard: registered state machines whose transitions need evidence or a signed override.

Ledgers live in git notes (``refs/notes/vivary/guard``); see ``docs/guard.md``.
"""

from strato.guard.verify import VerifyReport, verify_repository

__all__ = ["VerifyReport", "verify_repository"]
