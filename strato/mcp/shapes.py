"""The reference's shape language for Stratum's MCP wire contract, parsed once, and the one
pure check of a document against a shape, :func:`violations`.

Leaf types ``number|string|boolean|object|array|null|any``, unions with ``|``, ``A[]``
for an array of A, a key ending in ``?`` is optional, nested objects inline, a key
without a type is ``any`` unless :data:`BARE` names its type. A response is a variant:
``status`` (``type`` for an event) equals the variant's name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LEAVES = frozenset({"number", "string", "boolean", "object", "array", "null", "any"})

# a key the reference writes without a type has the type it gives that key elsewhere
BARE = {
    "runId": "string",
    "stepId": "string",
    "flow_id": "string",
    "label": "string",
    "guard_id": "string",
    "checksum": "string",
    "error_type": "string",
    "message": "string",
}


@dataclass(frozen=True)
class Leaf:
    name: str


@dataclass(frozen=True)
class Union:
    options: tuple[Shape, ...]


@dataclass(frozen=True)
class ArrayOf:
    item: Shape


@dataclass(frozen=True)
class Field:
    name: str
    shape: Shape
    optional: bool


@dataclass(frozen=True)
class Obj:
    fields: tuple[Field, ...]

    def plus(self, other: Obj) -> Obj:
        return Obj(self.fields + other.fields)

    def keys(self) -> dict[str, Field]:
        return {f.name: f for f in self.fields}


@dataclass(frozen=True)
class Variant:
    """One response (``tag="status"``) or event kind (``tag="type"``)."""

    tag: str
    name: str
    body: Obj


Shape = Leaf | Union | ArrayOf | Obj | Variant


# --- the parser of the reference's shape language

_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(\[\])|(.))")


class _Parser:
    def __init__(self, text: str, names: Mapping[str, Shape]) -> None:
        self.tokens = [
            m.group(1) or m.group(2) or m.group(3) for m in _TOKEN.finditer(text) if m.group().strip()
        ]
        self.pos = 0
        self.names = names

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, want: str | None = None) -> str:
        token = self.peek()
        if token is None or (want is not None and token != want):
            raise ValueError(f"shape: expected {want or 'a token'} at {self.pos}, got {token!r}")
        self.pos += 1
        return token

    def shape(self) -> Shape:
        options = [self.array()]
        while self.peek() == "|":
            self.take("|")
            options.append(self.array())
        return options[0] if len(options) == 1 else Union(tuple(options))

    def array(self) -> Shape:
        out = self.primary()
        while self.peek() == "[]":
            self.take("[]")
            out = ArrayOf(out)
        return out

    def primary(self) -> Shape:
        token = self.take()
        if token == "{":
            return self.obj()
        if token in LEAVES:
            return Leaf(token)
        if token in self.names:
            return self.names[token]
        raise ValueError(f"shape: unknown type {token!r}")

    def obj(self) -> Obj:
        fields: list[Field] = []
        while self.peek() != "}":
            name = self.take()
            optional = self.peek() == "?"
            if optional:
                self.take("?")
            if self.peek() == ":":
                self.take(":")
                shape = self.shape()
            else:
                shape = Leaf(BARE.get(name, "any"))
            fields.append(Field(name, shape, optional))
            if self.peek() == ",":
                self.take(",")
        self.take("}")
        return Obj(tuple(fields))


def parse(text: str, names: Mapping[str, Shape] | None = None) -> Shape:
    """The shape ``text`` writes, with ``names`` (the abbreviations) resolved."""
    p = _Parser(text, names or {})
    out = p.shape()
    if p.peek() is not None:
        raise ValueError(f"shape: trailing {p.peek()!r} in {text!r}")
    return out


def parse_object(text: str, names: Mapping[str, Shape]) -> Obj:
    shape = parse(text, names)
    if not isinstance(shape, Obj):
        raise ValueError(f"shape: {text!r} is not an object")
    return shape


def split_outside_braces(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


# --- the check


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _show(shape: Shape) -> str:
    if isinstance(shape, Leaf):
        return shape.name
    if isinstance(shape, Union):
        return "|".join(_show(o) for o in shape.options)
    if isinstance(shape, ArrayOf):
        return _show(shape.item) + "[]"
    return "object"


def violations(doc: Any, shape: Shape, where: str = "") -> list[str]:
    """Every way ``doc`` breaks ``shape``: a wrong type, an unknown or missing key, a
    ``status``/``type`` other than the variant's name; empty when it conforms."""
    at = where or "the document"
    if isinstance(shape, Variant):
        if not isinstance(doc, dict):
            return [f"{at}: expected object, got {_kind(doc)}"]
        found = (
            []
            if doc.get(shape.tag) == shape.name
            else [f"{at}: {shape.tag} is {doc.get(shape.tag)!r}, not {shape.name!r}"]
        )
        rest = {k: v for k, v in doc.items() if k != shape.tag}
        return found + violations(rest, shape.body, where)
    if isinstance(shape, Leaf):
        ok = shape.name == "any" or _kind(doc) == shape.name
        return [] if ok else [f"{at}: expected {shape.name}, got {_kind(doc)}"]
    if isinstance(shape, Union):
        if any(not violations(doc, o, where) for o in shape.options):
            return []
        return [f"{at}: expected {_show(shape)}, got {_kind(doc)}"]
    if isinstance(shape, ArrayOf):
        if not isinstance(doc, list):
            return [f"{at}: expected array, got {_kind(doc)}"]
        return [v for i, item in enumerate(doc) for v in violations(item, shape.item, f"{where}[{i}]")]
    if not isinstance(doc, dict):
        return [f"{at}: expected object, got {_kind(doc)}"]
    fields = shape.keys()
    prefix = f"{where}." if where else ""
    out = [f"{prefix}{key}: undeclared key" for key in doc if key not in fields]
    for name, f in fields.items():
        if name not in doc:
            if not f.optional:
                out.append(f"{prefix}{name}: missing")
            continue
        out.extend(violations(doc[name], f.shape, prefix + name))
    return out


def json_schema(shape: Shape) -> dict[str, Any]:
    """``shape`` as JSON Schema, for what a client reads (an MCP tool's `inputSchema`):
    an object's keys all declared, the optional ones not required, no other key allowed
    (:func:`violations` refuses an undeclared one)."""
    if isinstance(shape, Variant):
        return json_schema(shape.body)
    if isinstance(shape, Leaf):
        return {} if shape.name == "any" else {"type": shape.name}
    if isinstance(shape, Union):
        return {"anyOf": [json_schema(o) for o in shape.options]}
    if isinstance(shape, ArrayOf):
        return {"type": "array", "items": json_schema(shape.item)}
    return {
        "type": "object",
        "properties": {f.name: json_schema(f.shape) for f in shape.fields},
        "required": [f.name for f in shape.fields if not f.optional],
        "additionalProperties": False,
    }
