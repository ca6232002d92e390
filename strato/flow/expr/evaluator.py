"""Evaluation of a parsed expression over JSON bindings. Every operation checks its
operand types (no coercion) and every failure is an ExprError; nothing reaches a Python
attribute, so `__class__` and friends are just absent keys."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from strato.flow.expr import files
from strato.flow.expr.ast import Binary, Call, Ident, Index, Lit, Member, Node, Unary, parse
from strato.flow.expr.errors import ExprError
from strato.flow.expr.regex import search
from strato.flow.expr.values import check_binding, deep_equal, display, is_number, number, truthy

BINDINGS = frozenset({"result", "input", "item", "prev"})
MAX_STRING = 1 << 20
MAX_REGEX_INPUT = 4096
_INT_TEXT = r"[+-]?[0-9]+"


def evaluate(
    source: str, context: Mapping[str, Any], workspace_root: Path | str | None = None
) -> Any:
    """Evaluate `source` with bindings from `context` (keys among result, input, item,
    prev); file predicates read inside `workspace_root`. Raises ExprError only."""
    if not isinstance(source, str):
        raise ExprError("validation_error", "expression must be a string")
    for name, value in context.items():
        if name not in BINDINGS:
            raise ExprError(
                "validation_error", f"{name!r} cannot be bound (only {sorted(BINDINGS)})"
            )
        check_binding(value, name)
    try:
        tree = parse(source)
        root = None if workspace_root is None else Path(workspace_root)
        return _Eval(context, root).run(tree)
    except RecursionError:
        raise ExprError("resource_limit", "expression nests too deeply") from None


def evaluate_predicate(
    source: str, context: Mapping[str, Any], workspace_root: Path | str | None = None
) -> bool:
    """Evaluate an ensure/until predicate: anything but a boolean is a type_error."""
    value = evaluate(source, context, workspace_root)
    if not isinstance(value, bool):
        raise ExprError("type_error", f"predicate yielded {display_type(value)}, not a boolean")
    return value


def display_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _utf16_key(text: str) -> bytes:
    """JavaScript orders strings by UTF-16 code units."""
    return text.encode("utf-16-be", "surrogatepass")


def _bounded(length: int) -> None:
    """Refuse a string result over 1 MiB before it is built."""
    if length > MAX_STRING:
        raise ExprError("resource_limit", "string result longer than 1 MiB")


def _str(_: _Eval, value: Any) -> str:
    text = display(value, MAX_STRING)
    _bounded(len(text))
    return text


class _Eval:
    def __init__(self, context: Mapping[str, Any], root: Path | None) -> None:
        self.context = context
        self.root = root

    def run(self, node: Node) -> Any:
        if isinstance(node, Lit):
            return node.value
        if isinstance(node, Ident):
            if node.name not in self.context:
                raise ExprError("unknown_identifier", f"{node.name!r} is not bound here")
            return self.context[node.name]
        if isinstance(node, Member):
            obj = self.run(node.obj)
            if not isinstance(obj, dict):
                raise ExprError("type_error", f".{node.name} on {display_type(obj)}")
            return obj.get(node.name)
        if isinstance(node, Index):
            seq = self.run(node.obj)
            if not isinstance(seq, list):
                raise ExprError("type_error", f"[{node.index}] on {display_type(seq)}")
            return seq[node.index] if node.index < len(seq) else None
        if isinstance(node, Unary):
            return self.unary(node)
        if isinstance(node, Binary):
            return self.binary(node)
        return self.call(node)

    def boolean(self, node: Node, op: str) -> bool:
        value = self.run(node)
        if not isinstance(value, bool):
            raise ExprError("type_error", f"{op!r} needs booleans, got {display_type(value)}")
        return value

    def unary(self, node: Unary) -> Any:
        if node.op == "!":
            return not self.boolean(node.operand, "!")
        value = self.run(node.operand)
        if not is_number(value):
            raise ExprError("type_error", f"unary '-' needs a number, got {display_type(value)}")
        return number(-value)

    def binary(self, node: Binary) -> Any:
        op = node.op
        if op == "&&":
            return self.boolean(node.left, op) and self.boolean(node.right, op)
        if op == "||":
            return self.boolean(node.left, op) or self.boolean(node.right, op)
        left, right = self.run(node.left), self.run(node.right)
        if op == "==":
            return deep_equal(left, right)
        if op == "!=":
            return not deep_equal(left, right)
        if op == "in":
            return _contains(right, left)
        if op in ("<", "<=", ">", ">="):
            return _order(op, left, right)
        if op == "+" and isinstance(left, str) and isinstance(right, str):
            _bounded(len(left) + len(right))
            return left + right
        if not (is_number(left) and is_number(right)):
            raise ExprError(
                "type_error",
                f"{op!r} needs numbers, got {display_type(left)} and {display_type(right)}",
            )
        if op == "/":
            if right == 0:
                raise ExprError("type_error", "division by zero")
            return number(left / right)
        if op == "*":
            return number(float(left) * right if isinstance(left, float) else left * right)
        return number(left + right if op == "+" else left - right)

    def call(self, node: Call) -> Any:
        args = [self.run(a) for a in node.args]
        return _BUILTINS[node.fn](self, *args)


def _contains(haystack: Any, needle: Any) -> bool:
    if isinstance(haystack, list):
        return any(deep_equal(needle, item) for item in haystack)
    if isinstance(haystack, str | dict):
        if not isinstance(needle, str):
            raise ExprError("type_error", f"'in' {display_type(haystack)} needs a string needle")
        return needle in haystack
    raise ExprError(
        "type_error", f"'in' needs an array, string or object, got {display_type(haystack)}"
    )


def _order(op: str, left: Any, right: Any) -> bool:
    if is_number(left) and is_number(right):
        a, b = left, right
    elif isinstance(left, str) and isinstance(right, str):
        a, b = _utf16_key(left), _utf16_key(right)
    else:
        raise ExprError(
            "type_error",
            f"{op!r} needs two numbers or two strings, got "
            f"{display_type(left)} and {display_type(right)}",
        )
    return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def _len(_: _Eval, value: Any) -> int:
    if isinstance(value, str):
        return len(_utf16_key(value)) // 2
    if isinstance(value, list | dict):
        return len(value)
    raise ExprError(
        "type_error", f"len() needs a string, array or object, got {display_type(value)}"
    )


def _array(fn: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ExprError("type_error", f"{fn}() needs an array, got {display_type(value)}")
    return value


def _extreme(fn: str) -> Callable[[_Eval, Any], Any]:
    def pick(_: _Eval, value: Any) -> Any:
        items = _array(fn, value)
        if items and all(is_number(v) for v in items):
            return (max if fn == "max" else min)(items)
        if items and all(isinstance(v, str) for v in items):
            return (max if fn == "max" else min)(items, key=_utf16_key)
        raise ExprError("type_error", f"{fn}() needs a non-empty array of numbers or of strings")

    return pick


def _int(_: _Eval, value: Any) -> int | float:
    if isinstance(value, bool):
        return int(value)
    if is_number(value):
        return number(int(value))
    if isinstance(value, str) and re.fullmatch(_INT_TEXT, value):
        if len(value) > 400:
            raise ExprError("resource_limit", "int() of a string longer than 400 characters")
        return number(int(value))
    raise ExprError(
        "type_error", f"int() cannot convert {display_type(value)} {display(value)[:40]!r}"
    )


def _matches(_: _Eval, text: Any, pattern: Any) -> bool:
    if not (isinstance(text, str) and isinstance(pattern, str)):
        raise ExprError("type_error", "matches() needs a string text and a string pattern")
    if len(text) > MAX_REGEX_INPUT:
        raise ExprError("resource_limit", f"matches() input longer than {MAX_REGEX_INPUT}")
    return search(pattern, text)


def _path_arg(fn: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ExprError("type_error", f"{fn}() needs a string path, got {display_type(value)}")
    return value


def _file_exists(ev: _Eval, path: Any) -> bool:
    return files.file_exists(ev.root, _path_arg("file_exists", path))


def _file_contains(ev: _Eval, path: Any, text: Any) -> bool:
    if not isinstance(text, str):
        raise ExprError("type_error", "file_contains() needs a string text")
    return files.file_contains(ev.root, _path_arg("file_contains", path), text)


_BUILTINS: dict[str, Callable[..., Any]] = {
    "len": _len,
    "any": lambda _, v: any(truthy(x) for x in _array("any", v)),
    "all": lambda _, v: all(truthy(x) for x in _array("all", v)),
    "max": _extreme("max"),
    "min": _extreme("min"),
    "str": _str,
    "int": _int,
    "bool": lambda _, v: truthy(v),
    "matches": _matches,
    "file_exists": _file_exists,
    "file_contains": _file_contains,
}
