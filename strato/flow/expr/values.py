"""JSON values with JavaScript's semantics where Python's differ: `true != 1`, one
number type (integral floats print as integers), truthiness, compact JSON text."""

from __future__ import annotations

import json
import math
from typing import Any

from strato.flow.expr.errors import ExprError

SAFE_INT = 2**53
MAX_BINDING_DEPTH = 128


def is_number(value: Any) -> bool:
    """True for int/float but not bool (a Python bool is an int; a JSON one is not)."""
    return type(value) in (int, float)


def number(value: float) -> int | float:
    """Normalise an arithmetic result: finite, integral values as int within 2**53."""
    if isinstance(value, int):
        return value if -SAFE_INT <= value <= SAFE_INT else number(float(value))
    if not math.isfinite(value):
        raise ExprError("type_error", "arithmetic result is not a finite number")
    if value.is_integer() and abs(value) <= SAFE_INT:
        return int(value)
    return value


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
    """A number as JavaScript's String() prints it (1.0 -> "1", 1e-07 -> "1e-7")."""
    if isinstance(value, int):
        return str(value) if abs(value) < 10**21 else number_text(float(value))
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mant, exp = text.split("e")
        sign = "-" if exp.startswith("-") else "+"
        text = f"{mant}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"
    return text


def to_json(value: Any) -> str:
    """Compact JSON text as JSON.stringify writes it."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if is_number(value):
        return number_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (
            json.dumps(str(k), ensure_ascii=False) + ":" + to_json(v) for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    raise ExprError("type_error", f"not a JSON value: {type(value).__name__}")


def display(value: Any) -> str:
    """String(x): scalars as text, arrays and objects as JSON."""
    if isinstance(value, str):
        return value
    return to_json(value)


def check_binding(value: Any, name: str) -> None:
    """Refuse bindings that are not plain JSON, nest deeper than 128 or contain cycles."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    active: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if depth > MAX_BINDING_DEPTH:
            raise ExprError("resource_limit", f"binding {name!r} nests deeper than 128")
        if isinstance(node, list | dict):
            if id(node) in active:
                raise ExprError(
                    "resource_limit", f"binding {name!r} contains a cycle or shared node"
                )
            active.add(id(node))
            children = node.values() if isinstance(node, dict) else node
            if isinstance(node, dict) and not all(isinstance(k, str) for k in node):
                raise ExprError("validation_error", f"binding {name!r} has a non-string key")
            stack.extend((c, depth + 1) for c in children)
        elif not (node is None or isinstance(node, bool | str) or is_number(node)):
            raise ExprError(
                "validation_error", f"binding {name!r} is not JSON ({type(node).__name__})"
            )
        elif isinstance(node, float) and not math.isfinite(node):
            raise ExprError("validation_error", f"binding {name!r} holds a non-finite number")
