"""JSON values with JavaScript's semantics where Python's differ: `true != 1`, one
number type (integral floats print as integers), truthiness, compact JSON text."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from strato.flow.expr.errors import ExprError

SAFE_INT = 2**53
MAX_BINDING_DEPTH = 128
MAX_BINDING_NODES = 1_000_000


def is_number(value: Any) -> bool:
    """True for int/float but not bool (a Python bool is an int; a JSON one is not)."""
    return type(value) in (int, float)


def number(value: float) -> int | float:
    """Normalise an arithmetic result: finite, integral values as int within 2**53."""
    if isinstance(value, int):
        if -SAFE_INT <= value <= SAFE_INT:
            return value
        value = _double(value)
    if not math.isfinite(value):
        raise ExprError("type_error", "arithmetic result is not a finite number")
    if value.is_integer() and abs(value) <= SAFE_INT:
        return int(value)
    return value


def _double(value: int) -> float:
    """An int as JavaScript holds it: a double, infinite past the largest one (Python's
    `float()` raises instead, which would escape as something other than ExprError)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def deep_equal(a: Any, b: Any) -> bool:
    """JSON equality without coercion: 1 == 1.0, true != 1, {} == {}."""
    if is_number(a) and is_number(b):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(deep_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def truthy(value: Any) -> bool:
    """null, false, 0, "", [] and {} are falsy; everything else is truthy."""
    if value is None or value is False:
        return False
    if is_number(value):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return True


def number_text(value: int | float) -> str:
    """A number as JavaScript's String() prints it: the shortest digits that round-trip,
    in positional form from 1e-6 up to 1e21 and in exponent form outside
    (1.0 -> "1", 1e-05 -> "0.00001", 1e-07 -> "1e-7", 1e21 -> "1e+21")."""
    if isinstance(value, int):
        return str(value) if abs(value) < 10**21 else number_text(_double(value))
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, shortest.digits))
    point = len(digits) + int(shortest.exponent)  # the decimal point's place in `digits`
    if len(digits) <= point <= 21:
        return sign + digits + "0" * (point - len(digits))
    if 0 < point <= 21:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    exp = point - 1
    mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp)}"


def to_json(value: Any, limit: int | None = None) -> str:
    """Compact JSON text as JSON.stringify writes it; with `limit`, refuse (resource_limit)
    to build more characters than that."""
    parts: list[str] = []
    budget = [limit if limit is not None else -1]

    def put(text: str) -> None:
        parts.append(text)
        if budget[0] >= 0:
            budget[0] -= len(text)
            if budget[0] < 0:
                raise ExprError("resource_limit", f"text longer than {limit} characters")

    _write(value, put)
    return "".join(parts)


def _write(value: Any, put: Callable[[str], None]) -> None:
    if value is None or isinstance(value, bool):
        put(json.dumps(value))
    elif is_number(value):
        put(number_text(value))
    elif isinstance(value, str):
        put(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, list):
        put("[")
        for i, item in enumerate(value):
            if i:
                put(",")
            _write(item, put)
        put("]")
    elif isinstance(value, dict):
        put("{")
        for i, (key, item) in enumerate(value.items()):
            put(("," if i else "") + json.dumps(str(key), ensure_ascii=False) + ":")
            _write(item, put)
        put("}")
    else:
        raise ExprError("type_error", f"not a JSON value: {type(value).__name__}")


def display(value: Any, limit: int | None = None) -> str:
    """String(x): scalars as text, arrays and objects as JSON."""
    if isinstance(value, str):
        return value
    return to_json(value, limit)


def check_binding(value: Any, name: str) -> None:
    """Refuse bindings that are not plain JSON, nest deeper than 128 or contain cycles.

    Shared sub-objects are fine (a DAG is still JSON) as long as the expanded tree stays
    under 1,000,000 values, which bounds every later walk (equality, `in`, `str`); each
    container is measured once, so this check is linear in the distinct nodes."""
    heights: dict[int, int] = {}
    sizes: dict[int, int] = {}  # values in the fully expanded tree
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, leaving = stack.pop()
        if not isinstance(node, list | dict):
            _check_scalar(node, name)
            continue
        children = list(node.values()) if isinstance(node, dict) else node
        if leaving:
            on_path.discard(id(node))
            height = 1 + max((heights.get(id(c), 0) for c in children), default=0)
            if height > MAX_BINDING_DEPTH:
                raise ExprError("resource_limit", f"binding {name!r} nests deeper than 128")
            size = 1 + sum(sizes.get(id(c), 1) for c in children)
            if size > MAX_BINDING_NODES:
                raise ExprError(
                    "resource_limit", f"binding {name!r} expands to more than 1,000,000 values"
                )
            heights[id(node)], sizes[id(node)] = height, size
            continue
        if id(node) in heights:
            continue
        if id(node) in on_path:
            raise ExprError("resource_limit", f"binding {name!r} contains a cycle")
        if isinstance(node, dict) and not all(isinstance(k, str) for k in node):
            raise ExprError("validation_error", f"binding {name!r} has a non-string key")
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children)


def _check_scalar(node: Any, name: str) -> None:
    if not (node is None or isinstance(node, bool | str) or is_number(node)):
        raise ExprError("validation_error", f"binding {name!r} is not JSON ({type(node).__name__})")
    if isinstance(node, float) and not math.isfinite(node):
        raise ExprError("validation_error", f"binding {name!r} holds a non-finite number")
