"""The one exception the expression language raises: a kind from a closed set and a
message, so callers report `kind: message` and never see a Python traceback."""

from __future__ import annotations

from typing import Literal

ExprErrorKind = Literal[
    "parse_error",
    "unknown_identifier",
    "unknown_function",
    "type_error",
    "validation_error",
    "resource_limit",
]


class ExprError(Exception):
    def __init__(self, kind: ExprErrorKind, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind: ExprErrorKind = kind
        self.message = message
