"""The one error a guard operation raises: a Stratum ``error_type`` and a message."""

from __future__ import annotations


class GuardError(Exception):
    """A refused or failed guard operation; ``error_type`` is Stratum's vocabulary."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message

    def envelope(self) -> dict[str, str]:
        return {"status": "error", "error_type": self.error_type, "message": self.message}
