"""The contract type language: one string per field (`string?`, `Result[]`, `a|b`, ...).

Parsing is pure and total: a string either becomes a `TypeExpr` or `None` (the caller
reports `CONTRACT_INVALID_TYPE`). The same expressions type-check `${...}` paths at
validation time and check JSON values at run time, so both agree by construction.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCALARS = frozenset({"string", "integer", "number", "boolean"})
_NAMED = re.compile(r"[A-Z][a-zA-Z0-9_]*\Z")
_ENUM_BAD = re.compile(r"[\[\]()]")


@dataclass(frozen=True)
class Scalar:
    name: str  # string | integer | number | boolean


@dataclass(frozen=True)
class Untyped:
    name: str  # object | array: any JSON object / array


@dataclass(frozen=True)
class ArrayOf:
    item: TypeExpr


@dataclass(frozen=True)
class Enum:
    values: tuple[str, ...]


@dataclass(frozen=True)
class Named:
    name: str


@dataclass(frozen=True)
class Optional:
    inner: TypeExpr


TypeExpr = Scalar | Untyped | ArrayOf | Enum | Named | Optional
Contracts = Mapping[str, Mapping[str, str]]


def parse_type(text: str) -> TypeExpr | None:
    """Parse one field type; None when the string is not in the language."""
    if text.endswith("?"):
        inner = _parse_required(text[:-1])
        return None if inner is None else Optional(inner)
    return _parse_required(text)


def _parse_required(text: str) -> TypeExpr | None:
    if text.endswith("[]"):
        head = text[:-2]
        if head.startswith("(") and head.endswith(")"):
            values = _enum_values(head[1:-1])
            return None if values is None else ArrayOf(Enum(values))
        item = None if "|" in head else _parse_required(head)  # enum arrays need (a|b)[]
        return None if item is None else ArrayOf(item)
    if text in SCALARS:
        return Scalar(text)
    if text in ("object", "array"):
        return Untyped(text)
    if "|" in text:
        values = _enum_values(text)
        return None if values is None else Enum(values)
    if _NAMED.match(text):
        return Named(text)
    return None


def _enum_values(text: str) -> tuple[str, ...] | None:
    values = tuple(text.split("|"))
    if len(values) < 2 or any(not v or _ENUM_BAD.search(v) for v in values):
        return None
    return values


def named_refs(t: TypeExpr) -> list[str]:
    """Contract names a type mentions (for unknown-reference and cycle checks)."""
    if isinstance(t, Named):
        return [t.name]
    if isinstance(t, Optional):
        return named_refs(t.inner)
    if isinstance(t, ArrayOf):
        return named_refs(t.item)
    return []


class _AnyType:
    """The type of whatever an untyped `object`/`array` holds: every path is allowed."""


ANY = _AnyType()
PathType = TypeExpr | _AnyType


def walk(t: PathType, path: tuple[str | int, ...], contracts: Contracts) -> PathType | None:
    """The type reached by following `path` from `t`, or None if the path cannot exist."""
    for seg in path:
        if isinstance(t, _AnyType):
            return ANY
        while isinstance(t, Optional):
            t = t.inner
        if isinstance(t, Untyped):
            if (t.name == "object") != isinstance(seg, str):
                return None
            return ANY
        if isinstance(t, ArrayOf) and isinstance(seg, int):
            t = t.item
        elif isinstance(t, Named) and isinstance(seg, str):
            field = contracts.get(t.name, {}).get(seg)
            parsed = None if field is None else parse_type(field)
            if parsed is None:
                return None
            t = parsed
        else:
            return None
    return t


def check_value(value: Any, t: TypeExpr, contracts: Contracts, path: str = "") -> list[str]:
    """Messages for every place `value` breaks the type (empty = conforms).

    Contracts are strict: undeclared keys are rejected, `T?` admits absent or null."""
    if isinstance(t, Optional):
        return [] if value is None else check_value(value, t.inner, contracts, path)
    where = path or "value"
    if isinstance(t, Scalar):
        ok = _scalar_ok(value, t.name)
        return [] if ok else [f"{where}: expected {t.name}"]
    if isinstance(t, Untyped):
        want = dict if t.name == "object" else list
        return [] if isinstance(value, want) else [f"{where}: expected {t.name}"]
    if isinstance(t, Enum):
        ok = isinstance(value, str) and value in t.values
        return [] if ok else [f"{where}: expected one of {'|'.join(t.values)}"]
    if isinstance(t, ArrayOf):
        if not isinstance(value, list):
            return [f"{where}: expected array"]
        out: list[str] = []
        for i, item in enumerate(value):
            out += check_value(item, t.item, contracts, f"{path}[{i}]")
        return out
    return check_object(value, contracts.get(t.name, {}), contracts, path)


def check_object(
    value: Any, fields: Mapping[str, str], contracts: Contracts, path: str = ""
) -> list[str]:
    """Check a JSON object against a field map (a contract or a flow `input`)."""
    if not isinstance(value, dict):
        return [f"{path or 'value'}: expected object"]
    prefix = f"{path}." if path else ""
    out = [f"{prefix}{key}: unexpected field" for key in value if key not in fields]
    for key, text in fields.items():
        ft = parse_type(text)
        if ft is None:
            out.append(f"{prefix}{key}: invalid type {text!r}")
        elif key not in value and not isinstance(ft, Optional):
            out.append(f"{prefix}{key}: required")
        elif key in value:
            out += check_value(value[key], ft, contracts, prefix + key)
    return out


def _scalar_ok(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if type(value) not in (int, float) or not math.isfinite(value):
        return False
    return name == "number" or float(value).is_integer()
