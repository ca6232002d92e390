"""What a governed verification may cost before it starts: the canonical-JSON work of a
value, its nesting depth, identifier lengths and scope comparisons, each with the suite's
limit (vivary-ozone 0.3.2), so a hostile request is refused before anything is walked twice.

All iterative: neither a deep nor a huge value costs stack or more than its limit.
"""

from __future__ import annotations

from typing import Any, TypeGuard

#: Canonical-JSON work (values plus escaped characters) a request may cost to inspect.
MAX_WORK = 10_000_000
#: Containers nested deeper than this (the request object is level 1) are refused: the
#: depth from which the suite's recursive canonical-value check gives up, made a rule.
MAX_DEPTH = 331
MAX_IDENTIFIER_BYTES = 128
MAX_SCOPE_COMPARISONS = 100_000
MAX_SCOPE_SCALAR_WORK = 10_000_000
_CONTROLS = "".join(map(chr, range(0x20)))


def string_cost(text: str) -> int:
    """Bytes of `text` in ASCII-escaped JSON, quotes excluded."""
    if text.isascii():
        controls = len(text) - len(text.translate({ord(c): None for c in _CONTROLS}))
        return len(text) + text.count('"') + text.count("\\") + 5 * controls
    return sum(
        2 if ch in '"\\' else 6 if ord(ch) < 0x20 else 1 if ord(ch) < 0x80 else 6 if ord(ch) <= 0xFFFF else 12
        for ch in text
    )


def work_units(value: Any, limit: int = MAX_WORK) -> int | None:
    """What inspecting ``value`` costs (one unit per value, keys included, plus each
    string's escaped length), or None once that passes ``limit``."""
    work, stack = 0, [value]
    while stack:
        item = stack.pop()
        work += 1
        if isinstance(item, str):
            work += string_cost(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        if work + len(stack) > limit:
            return None
    return work


def work_within(value: Any, limit: int = MAX_WORK) -> bool:
    return work_units(value, limit) is not None


def depth_within(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether no container in ``value`` is nested more than ``limit`` levels deep."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if level > limit:
            return False
        stack.extend((child, level + 1) for child in children)
    return True


def nonempty(value: Any) -> TypeGuard[str]:
    """A string with at least one character: the governed formats' "text" field."""
    return isinstance(value, str) and bool(value)


def count_at_least(value: Any, least: int) -> bool:
    """An integer (a bool is not one) of at least ``least``: a count a record carries."""
    return type(value) is int and value >= least


def nonblank(value: Any) -> TypeGuard[str]:
    """A string with more than whitespace: a field a reader must be able to see."""
    return isinstance(value, str) and bool(value.strip())


def identifier(value: Any) -> bool:
    """A non-blank string short enough to key a repair proposal by."""
    return nonblank(value) and 2 + string_cost(value) <= MAX_IDENTIFIER_BYTES


def scope_work_bounded(scope: Any, paths: Any) -> bool:
    """Whether matching every path against every scope root stays within the limits."""
    if not (
        isinstance(scope, list)
        and isinstance(paths, list)
        and all(isinstance(root, str) for root in scope)
        and all(isinstance(path, str) for path in paths)
    ):
        return False
    if len(scope) * len(paths) > MAX_SCOPE_COMPARISONS:
        return False
    scalar = len(paths) * sum(map(len, scope)) + len(scope) * sum(map(len, paths))
    return scalar <= MAX_SCOPE_SCALAR_WORK
