"""`matches()` patterns: a safe-shape filter and our own linear-time matcher.

The filter refuses catastrophic shapes before anything runs: length > 256, back-
references, any `(?` group, a quantified group that contains a quantifier or an
alternation, two quantified atoms in a row, more than 32 quantifiers, dangling or
unbalanced constructs, escapes outside the portable set. Accepted patterns are then
compiled to a small NFA program and searched by simulation (Pike VM), so even shapes
the filter lets through (`.*a.*b.*c`) cost O(text x program), never backtracking.
Semantics follow JavaScript's `u` flag: ASCII `\\d \\w \\b`, `.` stops at line
terminators, `^`/`$` anchor the whole text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from strato.flow.expr.errors import ExprError

MAX_PATTERN = 256
MAX_QUANTIFIERS = 32
MAX_REPEAT = 1000
MAX_PROGRAM = 1024
_BOUND = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_HEX = {"u": 4, "x": 2}
_SYNTAX = set("^$\\.*+?()[]{}|/-")

Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CharSet:
    """Matches a character in `ranges` or in any of `subs`, inverted by `negate`."""

    ranges: Ranges
    negate: bool = False
    subs: tuple[CharSet, ...] = ()

    def __contains__(self, ch: str) -> bool:
        code = ord(ch)
        hit = any(lo <= code <= hi for lo, hi in self.ranges) or any(ch in s for s in self.subs)
        return hit != self.negate


_DIGIT = CharSet(((48, 57),))
_WORD = CharSet(((48, 57), (65, 90), (95, 95), (97, 122)))
_SPACE = CharSet(
    (
        (9, 13),
        (32, 32),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    )
)
_LINE_END = ((10, 10), (13, 13), (0x2028, 0x2029))
_CLASSES = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_CONTROL = {"n": 10, "r": 13, "t": 9, "f": 12, "v": 11, "0": 0}


# --- syntax tree


@dataclass(frozen=True)
class Atom:
    chars: CharSet


@dataclass(frozen=True)
class Assert:
    kind: str  # ^ $ b B


@dataclass(frozen=True)
class Repeat:
    node: Node
    low: int
    high: int | None


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


Node = Atom | Assert | Repeat | Seq | Alt


@dataclass
class _Group:
    """One open `(`...`)` (or the whole pattern) while scanning."""

    alts: list[list[Node]] = field(default_factory=lambda: [[]])
    has_quantifier: bool = False
    has_alternation: bool = False
    last_quantified: bool = False  # the most recent item carries a quantifier
    before_quantified: bool = False  # the item before the current atom did
    quantifiable: bool = False  # the most recent item can take a quantifier
    inner: _Group | None = None  # the just-closed child group, if that is the item

    def push(self, node: Node, quantifiable: bool, inner: _Group | None = None) -> None:
        self.alts[-1].append(node)
        self.before_quantified = self.last_quantified and quantifiable
        self.last_quantified = False
        self.quantifiable, self.inner = quantifiable, inner

    def node(self) -> Node:
        options = tuple(Seq(tuple(a)) for a in self.alts)
        return options[0] if len(options) == 1 else Alt(options)


def _refuse(reason: str) -> ExprError:
    return ExprError("validation_error", f"regex refused by safe-shape filter: {reason}")


def check_shape(pattern: str) -> Node:
    """Parse a pattern, refusing unsafe or unportable shapes (raises ExprError)."""
    if len(pattern) > MAX_PATTERN:
        raise ExprError("resource_limit", f"regex longer than {MAX_PATTERN} characters")
    stack = [_Group()]
    quantifiers = 0
    i = 0
    while i < len(pattern):
        ch, top = pattern[i], stack[-1]
        if ch == "\\":
            node, i = _escape(pattern, i)
            top.push(node, isinstance(node, Atom))
            continue
        if ch == "[":
            chars, i = _char_class(pattern, i)
            top.push(Atom(chars), True)
            continue
        if ch in "*+?{":
            quantifiers += 1
            if quantifiers > MAX_QUANTIFIERS:
                raise ExprError(
                    "resource_limit", f"regex has more than {MAX_QUANTIFIERS} quantifiers"
                )
            i = _quantifier(pattern, i, top)
            continue
        if ch == "(":
            if pattern.startswith("(?", i):
                raise _refuse("'(?' groups are not allowed")
            stack.append(_Group())
        elif ch == ")":
            if len(stack) == 1:
                raise _refuse("unbalanced ')'")
            child = stack.pop()
            stack[-1].has_quantifier |= child.has_quantifier
            stack[-1].push(child.node(), True, child)
        elif ch == "|":
            top.has_alternation = True
            top.alts.append([])
            top.last_quantified = top.quantifiable = False
        elif ch in "]}":
            raise _refuse(f"dangling {ch!r}")
        elif ch in "^$":
            top.push(Assert(ch), False)
        elif ch == ".":
            top.push(Atom(CharSet(_LINE_END, negate=True)), True)
        else:
            top.push(Atom(CharSet(((ord(ch), ord(ch)),))), True)
        i += 1
    if len(stack) != 1:
        raise _refuse("unbalanced '('")
    return stack[0].node()


def _quantifier(pattern: str, i: int, top: _Group) -> int:
    if not top.quantifiable:
        raise _refuse(f"quantifier at offset {i} has nothing to repeat")
    if pattern[i] == "{":
        m = _BOUND.match(pattern, i)
        if not m:
            raise _refuse(f"malformed '{{' at offset {i}")
        low = int(m.group(1))
        high = None if m.group(2) and not m.group(3) else int(m.group(3) or low)
        if low > MAX_REPEAT or (high is not None and not low <= high <= MAX_REPEAT):
            raise _refuse(f"repetition bound at offset {i} out of range")
        end = m.end()
    else:
        low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[pattern[i]]
        end = i + 1
    if top.inner is not None and top.inner.has_quantifier:
        raise _refuse(f"nested quantifier at offset {i}")
    if top.inner is not None and top.inner.has_alternation:
        raise _refuse(f"quantified alternation at offset {i}")
    if top.before_quantified:
        raise _refuse(f"adjacent quantified atoms at offset {i}")
    if pattern.startswith("?", end):
        end += 1  # lazy modifier: same language, so the same boolean answer
    if end < len(pattern) and pattern[end] in "*+?{":
        raise _refuse(f"stacked quantifiers at offset {end}")
    top.alts[-1][-1] = Repeat(top.alts[-1][-1], low, high)
    top.has_quantifier = True
    top.quantifiable = False
    top.last_quantified = True
    return end


def _escape(pattern: str, i: int) -> tuple[Atom | Assert, int]:
    """One `\\x` escape outside a class."""
    esc = pattern[i + 1 : i + 2]
    if not esc:
        raise _refuse("dangling '\\' at end of pattern")
    if esc in "123456789":
        raise _refuse(f"backreference at offset {i}")
    if esc in "bB":
        return Assert(esc), i + 2
    chars, end = _escape_chars(pattern, i)
    return Atom(chars), end


def _escape_chars(pattern: str, i: int) -> tuple[CharSet, int]:
    esc = pattern[i + 1 : i + 2]
    if esc.lower() in _CLASSES:
        base = _CLASSES[esc.lower()]
        return (CharSet((), True, (base,)) if esc.isupper() else base), i + 2
    if esc in _CONTROL:
        code = _CONTROL[esc]
    elif esc in _HEX:
        digits = pattern[i + 2 : i + 2 + _HEX[esc]]
        if len(digits) != _HEX[esc] or not re.fullmatch(r"[0-9a-fA-F]+", digits):
            raise _refuse(f"malformed \\{esc} escape at offset {i}")
        return CharSet(((int(digits, 16),) * 2,)), i + 2 + _HEX[esc]
    elif esc in _SYNTAX:
        code = ord(esc)
    else:
        raise _refuse(f"unsupported escape \\{esc} at offset {i}")
    return CharSet(((code, code),)), i + 2


def _char_class(pattern: str, i: int) -> tuple[CharSet, int]:
    """A `[...]` class; returns the set and the index after `]`."""
    j = i + 1
    negate = pattern.startswith("^", j)
    j += negate
    if pattern.startswith("]", j):
        raise _refuse(f"empty character class at offset {i}")
    ranges: list[tuple[int, int]] = []
    subs: list[CharSet] = []
    while j < len(pattern) and pattern[j] != "]":
        lo, j = _class_atom(pattern, j)
        if pattern.startswith("-", j) and j + 1 < len(pattern) and pattern[j + 1] != "]":
            hi, j = _class_atom(pattern, j + 1)
            if not (isinstance(lo, int) and isinstance(hi, int) and lo <= hi):
                raise _refuse(f"invalid class range at offset {j}")
            ranges.append((lo, hi))
        elif isinstance(lo, int):
            ranges.append((lo, lo))
        else:
            subs.append(lo)
    if j >= len(pattern):
        raise _refuse(f"unterminated character class at offset {i}")
    return CharSet(tuple(ranges), negate, tuple(subs)), j + 1


def _class_atom(pattern: str, j: int) -> tuple[int | CharSet, int]:
    if pattern[j] != "\\":
        return ord(pattern[j]), j + 1
    if pattern[j + 1 : j + 2] == "b":
        return 8, j + 2  # backspace inside a class
    chars, end = _escape_chars(pattern, j)
    single = len(chars.ranges) == 1 and not chars.negate and not chars.subs
    if single and chars.ranges[0][0] == chars.ranges[0][1]:
        return chars.ranges[0][0], end
    return chars, end


# --- program and simulation

# instructions: ("char", CharSet) ("split", a, b) ("jmp", a) ("assert", kind) ("match",)
Instr = tuple[object, ...]


def _emit(node: Node, prog: list[Instr]) -> None:
    if len(prog) > MAX_PROGRAM:
        raise ExprError("resource_limit", "regex expands to too large a program")
    if isinstance(node, Atom):
        prog.append(("char", node.chars))
    elif isinstance(node, Assert):
        prog.append(("assert", node.kind))
    elif isinstance(node, Seq):
        for item in node.items:
            _emit(item, prog)
    elif isinstance(node, Alt):
        jumps: list[int] = []
        for k, option in enumerate(node.options):
            if k < len(node.options) - 1:
                split = len(prog)
                prog.append(("split", split + 1, -1))
                _emit(option, prog)
                jumps.append(len(prog))
                prog.append(("jmp", -1))
                prog[split] = ("split", split + 1, len(prog))
            else:
                _emit(option, prog)
        for at in jumps:
            prog[at] = ("jmp", len(prog))
    else:
        _emit_repeat(node, prog)


def _emit_repeat(node: Repeat, prog: list[Instr]) -> None:
    for _ in range(node.low):
        _emit(node.node, prog)
    if node.high is None:
        split = len(prog)
        prog.append(("split", split + 1, -1))
        _emit(node.node, prog)
        prog.append(("jmp", split))
        prog[split] = ("split", split + 1, len(prog))
        return
    splits: list[int] = []
    for _ in range(node.high - node.low):
        splits.append(len(prog))
        prog.append(("split", len(prog) + 1, -1))
        _emit(node.node, prog)
    for at in splits:
        prog[at] = ("split", at + 1, len(prog))


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> tuple[Instr, ...]:
    """Check the shape and build the matcher program (raises ExprError when refused)."""
    prog: list[Instr] = []
    _emit(check_shape(pattern), prog)
    prog.append(("match",))
    return tuple(prog)


def _is_word(text: str, i: int) -> bool:
    return 0 <= i < len(text) and text[i] in _WORD


def _holds(kind: object, text: str, i: int) -> bool:
    if kind == "^":
        return i == 0
    if kind == "$":
        return i == len(text)
    boundary = _is_word(text, i - 1) != _is_word(text, i)
    return boundary if kind == "b" else not boundary


def _closure(prog: tuple[Instr, ...], starts: list[int], text: str, i: int) -> set[int]:
    """Every instruction reachable from `starts` at position i without reading input."""
    seen: set[int] = set()
    stack = list(starts)
    while stack:
        pc = stack.pop()
        if pc in seen:
            continue
        seen.add(pc)
        op = prog[pc]
        if op[0] == "jmp":
            stack.append(op[1])  # type: ignore[arg-type]
        elif op[0] == "split":
            stack += [op[2], op[1]]  # type: ignore[list-item]
        elif op[0] == "assert" and _holds(op[1], text, i):
            stack.append(pc + 1)
    return seen


def search(pattern: str, text: str) -> bool:
    """True if the pattern matches anywhere in text (JavaScript `RegExp.test`)."""
    prog = compile_pattern(pattern)
    match = len(prog) - 1
    current: set[int] = set()
    for i in range(len(text) + 1):
        current = _closure(prog, [*current, 0], text, i)
        if match in current:
            return True
        if i == len(text):
            break
        ch = text[i]
        current = {
            pc + 1
            for pc in current
            if prog[pc][0] == "char" and ch in prog[pc][1]  # type: ignore[operator]
        }
    return False
