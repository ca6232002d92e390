"""Tokens of the expression language. Strings use JSON-style escapes; numbers are
JSON numbers; anything else is a parse_error with the offset."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from strato.flow.expr.errors import ExprError

MAX_SOURCE = 65536
TokenKind = Literal["str", "num", "ident", "op", "end"]
KEYWORDS = frozenset({"true", "false", "null", "in"})

_NUMBER = re.compile(r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = (
    "||",
    "&&",
    "==",
    "!=",
    "<=",
    ">=",
    "<",
    ">",
    "+",
    "-",
    "*",
    "/",
    "!",
    ".",
    "[",
    "]",
    "(",
    ")",
    ",",
)
_ESCAPES = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str
    value: str | int | float | None
    pos: int


def tokenize(source: str) -> list[Token]:
    if len(source) > MAX_SOURCE:
        raise ExprError("resource_limit", f"expression longer than {MAX_SOURCE} characters")
    out: list[Token] = []
    i = 0
    while i < len(source):
        ch = source[i]
        if ch in " \t\r\n":
            i += 1
        elif ch in "'\"":
            text, i = _string(source, i)
            out.append(Token("str", ch, text, i))
        elif ch in "0123456789":
            m = _NUMBER.match(source, i)
            assert m is not None  # a digit always starts a number
            if m.end() < len(source) and (source[m.end()].isalnum() or source[m.end()] in "._"):
                raise ExprError("parse_error", f"malformed number at offset {i}")
            out.append(Token("num", m.group(), _number(m.group(), i), i))
            i = m.end()
        elif (m := _IDENT.match(source, i)) is not None:
            out.append(Token("ident", m.group(), None, i))
            i = m.end()
        else:
            op = next((op for op in _OPS if source.startswith(op, i)), None)
            if op is None:
                raise ExprError("parse_error", f"unexpected character {ch!r} at offset {i}")
            out.append(Token("op", op, None, i))
            i += len(op)
    out.append(Token("end", "", None, len(source)))
    return out


def _number(text: str, pos: int) -> int | float:
    if len(text) <= 15 and text.isdigit():
        return int(text)
    value = float(text)  # long literals overflow to inf instead of building a bignum
    if value in (float("inf"), float("-inf")):
        raise ExprError("parse_error", f"number at offset {pos} is not finite")
    return int(value) if value.is_integer() and abs(value) <= 2**53 else value


def _string(source: str, start: int) -> tuple[str, int]:
    quote = source[start]
    chars: list[str] = []
    i = start + 1
    while i < len(source):
        ch = source[i]
        if ch == quote:
            return _join_surrogates("".join(chars)), i + 1
        if ch < " ":
            raise ExprError("parse_error", f"raw control character in string at offset {i}")
        if ch == "\\":
            esc = source[i + 1 : i + 2]
            if esc in _ESCAPES:
                chars.append(_ESCAPES[esc])
                i += 2
            elif esc == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", source[i + 2 : i + 6]):
                chars.append(chr(int(source[i + 2 : i + 6], 16)))
                i += 6
            else:
                raise ExprError("parse_error", f"invalid escape in string at offset {i}")
        else:
            chars.append(ch)
            i += 1
    raise ExprError("parse_error", f"unterminated string starting at offset {start}")


def _join_surrogates(text: str) -> str:
    """Pair `\\uD83D\\uDE00`-style escapes into one character, as JavaScript strings do."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
