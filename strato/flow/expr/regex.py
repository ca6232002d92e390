"""`matches()` patterns: a safe-shape filter that refuses catastrophic-backtracking
shapes *before* anything is compiled, and a translation of the accepted JavaScript
(`u` flag) subset into an equivalent Python pattern.

Refused: length > 256, backreferences, any `(?` group, a quantified group that contains
a quantifier or an alternation, two quantified atoms in a row, more than 32 quantifiers,
dangling or unbalanced constructs, escapes outside the portable set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from strato.flow.expr.errors import ExprError

MAX_PATTERN = 256
MAX_QUANTIFIERS = 32
MAX_REPEAT = 1000
_ATOM_ESCAPES = set("dDwWsSnrtfv0") | set("^$\\.*+?()[]{}|/-")
_BOUND = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_HEX = {"u": 4, "x": 2}


@dataclass
class _Group:
    """Bookkeeping for one open `(`...`)` (or the whole pattern)."""

    has_quantifier: bool = False
    has_alternation: bool = False
    last_quantified: bool = False  # the most recent item carries a quantifier
    before_quantified: bool = False  # the item before the current atom did
    last_atom: str | None = None  # "atom", "group" or None (nothing quantifiable)
    inner: _Group | None = None  # the just-closed child group, if last_atom == "group"
    out: list[str] = field(default_factory=list)


def _refuse(reason: str) -> ExprError:
    return ExprError("validation_error", f"regex refused by safe-shape filter: {reason}")


@lru_cache(maxsize=256)
def compile_safe(pattern: str) -> re.Pattern[str]:
    """Check the shape, translate, then compile (raises ExprError when refused)."""
    return re.compile(translate(pattern), re.ASCII)


def translate(pattern: str) -> str:
    """The Python equivalent of an accepted pattern; raises ExprError otherwise."""
    if len(pattern) > MAX_PATTERN:
        raise ExprError("resource_limit", f"regex longer than {MAX_PATTERN} characters")
    stack = [_Group()]
    quantifiers = 0
    i = 0
    while i < len(pattern):
        ch, top = pattern[i], stack[-1]
        if ch == "\\":
            text, i, quantifiable = _escape(pattern, i)
            top.out.append(text)
            _atom(top, "atom" if quantifiable else None)
            continue
        if ch == "(":
            if pattern.startswith("(?", i):
                raise _refuse("'(?' groups are not allowed")
            stack.append(_Group(out=["("]))
        elif ch == ")":
            if len(stack) == 1:
                raise _refuse("unbalanced ')'")
            child = stack.pop()
            parent = stack[-1]
            parent.out.append("".join(child.out) + ")")
            parent.has_quantifier |= child.has_quantifier
            _atom(parent, "group", child)
        elif ch == "[":
            text, i = _char_class(pattern, i)
            top.out.append(text)
            _atom(top, "atom")
            continue
        elif ch in "*+?{":
            quantifiers += 1
            if quantifiers > MAX_QUANTIFIERS:
                raise ExprError(
                    "resource_limit", f"regex has more than {MAX_QUANTIFIERS} quantifiers"
                )
            i = _quantifier(pattern, i, top)
            continue
        elif ch == "|":
            top.has_alternation = True
            top.out.append("|")
            _atom(top, None)
        elif ch in "]}":
            raise _refuse(f"dangling {ch!r}")
        elif ch in "^$":
            top.out.append(r"\Z" if ch == "$" else "^")
            _atom(top, None)
        elif ch == ".":
            top.out.append(r"[^\n\r\u2028\u2029]")
            _atom(top, "atom")
        else:
            top.out.append(re.escape(ch))
            _atom(top, "atom")
        i += 1
    if len(stack) != 1:
        raise _refuse("unbalanced '('")
    return "".join(stack[0].out)


def _atom(top: _Group, kind: str | None, inner: _Group | None = None) -> None:
    """Record a new unquantified item (kind None = not quantifiable: anchors, `|`)."""
    top.before_quantified = top.last_quantified and kind is not None
    top.last_quantified = False
    top.last_atom, top.inner = kind, inner


def _quantifier(pattern: str, i: int, top: _Group) -> int:
    if top.last_atom is None:
        raise _refuse(f"quantifier at offset {i} has nothing to repeat")
    if pattern[i] == "{":
        m = _BOUND.match(pattern, i)
        if not m:
            raise _refuse(f"malformed '{{' at offset {i}")
        low, high = int(m.group(1)), m.group(3)
        if low > MAX_REPEAT or (high and int(high) > MAX_REPEAT) or (high and int(high) < low):
            raise _refuse(f"repetition bound at offset {i} out of range")
        text, end = m.group(), m.end()
    else:
        text, end = pattern[i], i + 1
    if top.last_atom == "group" and top.inner is not None:
        if top.inner.has_quantifier:
            raise _refuse(f"nested quantifier at offset {i}")
        if top.inner.has_alternation:
            raise _refuse(f"quantified alternation at offset {i}")
    if top.before_quantified:
        raise _refuse(f"adjacent quantified atoms at offset {i}")
    if pattern.startswith("?", end):
        text, end = text + "?", end + 1  # lazy modifier, not a second quantifier
    if end < len(pattern) and pattern[end] in "*+?{":
        raise _refuse(f"stacked quantifiers at offset {end}")
    top.out.append(text)
    top.has_quantifier = True
    top.last_atom = None
    top.last_quantified = True
    return end


def _escape(pattern: str, i: int) -> tuple[str, int, bool]:
    """One `\\x` escape: (python text, next index, quantifiable)."""
    esc = pattern[i + 1 : i + 2]
    if not esc:
        raise _refuse("dangling '\\' at end of pattern")
    if esc in "123456789":
        raise _refuse(f"backreference at offset {i}")
    if esc in "bB":
        return "\\" + esc, i + 2, False
    if esc in _HEX:
        digits = pattern[i + 2 : i + 2 + _HEX[esc]]
        if not re.fullmatch(r"[0-9a-fA-F]+", digits) or len(digits) != _HEX[esc]:
            raise _refuse(f"malformed \\{esc} escape at offset {i}")
        return re.escape(chr(int(digits, 16))), i + 2 + _HEX[esc], True
    if esc not in _ATOM_ESCAPES:
        raise _refuse(f"unsupported escape \\{esc} at offset {i}")
    return "\\" + esc, i + 2, True


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """A `[...]` class copied through with its escapes checked; returns the next index."""
    out = ["["]
    j = i + 1
    if pattern.startswith("^", j):
        out.append("^")
        j += 1
    if pattern.startswith("]", j):
        raise _refuse(f"empty character class at offset {i}")
    while j < len(pattern) and pattern[j] != "]":
        if pattern[j] == "\\":
            text, j, quantifiable = _escape(pattern, j)
            if not quantifiable:
                raise _refuse(f"assertion escape inside a class at offset {j}")
            out.append(text)
        else:
            out.append("\\" + pattern[j] if pattern[j] in "[&~|" else pattern[j])
            j += 1
    if j >= len(pattern):
        raise _refuse(f"unterminated character class at offset {i}")
    return "".join(out) + "]", j + 1
