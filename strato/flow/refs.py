"""`${...}` references: parsing (for validation and dependency edges) and resolution
(for rendering task text, `with`, `fanout.over`, `output.from` at run time).

A string either parses completely or is rejected as a whole (`RefSyntaxError`): there
is no escape for a literal `${`, and half a reference is never silently kept as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from strato.flow.expr.values import to_json

_MATCH = re.compile(r"\$\{([^}]*)\}")
_STEP_ID = r"[a-z][a-z0-9_-]*"
_PATH = r"(?:\.[a-zA-Z_][a-zA-Z0-9_]*|\[[0-9]+\])*"
_BODY = re.compile(rf"(?P<head>{_STEP_ID})(?P<path>{_PATH})\Z")
_SEGMENT = re.compile(r"\.([a-zA-Z_][a-zA-Z0-9_]*)|\[([0-9]+)\]")

RefKind = Literal["input", "step", "carry", "item", "prev"]
Path = tuple[str | int, ...]


class RefSyntaxError(ValueError):
    """A string whose `${...}` usage does not parse (validation code `REF_INVALID`)."""


class Unresolved(LookupError):
    """A reference whose value is not available (absent input, skipped step, bad path)."""


@dataclass(frozen=True)
class Ref:
    """One parsed reference. `name` is the step id or carry name ("" otherwise);
    `path` follows `.output` for step refs and the head for the others."""

    kind: RefKind
    name: str
    path: Path
    source: str  # the body between the braces, for messages


@dataclass(frozen=True)
class Template:
    """A parsed string: literal text and references in order. `full` is set when the
    whole string is exactly one reference (its value then keeps its JSON type)."""

    parts: tuple[str | Ref, ...]
    full: Ref | None

    @property
    def refs(self) -> list[Ref]:
        return [p for p in self.parts if isinstance(p, Ref)]


def _split_path(text: str) -> Path:
    return tuple(
        m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _SEGMENT.finditer(text)
    )


def parse_ref(body: str) -> Ref:
    """Parse the text between `${` and `}`."""
    m = _BODY.match(body)
    if not m:
        raise RefSyntaxError(f"invalid reference ${{{body}}}")
    head, path = m.group("head"), _split_path(m.group("path"))
    if head in ("item", "prev"):
        return Ref(head, "", path, body)  # type: ignore[arg-type]
    if head == "input":
        if not path:
            raise RefSyntaxError("${input} needs a field path, e.g. ${input.text}")
        return Ref("input", "", path, body)
    if path[:1] == ("output",):
        return Ref("step", head, path[1:], body)
    return Ref("carry", head, path, body)


def parse_template(text: str) -> Template:
    """Parse every `${...}` in `text`; raises RefSyntaxError if any is malformed."""
    parts: list[str | Ref] = []
    starts: set[int] = set()
    pos = 0
    for m in _MATCH.finditer(text):
        starts.add(m.start())
        if m.start() > pos:
            parts.append(text[pos : m.start()])
        parts.append(parse_ref(m.group(1)))
        pos = m.end()
    if pos < len(text):
        parts.append(text[pos:])
    stray = [i for i in _dollar_braces(text) if i not in starts]
    if stray:
        raise RefSyntaxError(f"unterminated or nested '${{' at offset {stray[0]}")
    full = parts[0] if len(parts) == 1 and isinstance(parts[0], Ref) else None
    return Template(tuple(parts), full)


def _dollar_braces(text: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\$\{", text)]


def has_refs(text: str) -> bool:
    return "${" in text


@dataclass
class Scope:
    """What references resolve against at run time. Missing entries mean unavailable
    (a skipped step has no entry in `outputs`)."""

    input: Mapping[str, Any]
    outputs: Mapping[str, Any] = field(default_factory=dict)
    carry: Mapping[str, Any] = field(default_factory=dict)
    item: Any = None
    prev: Any = None
    in_stage: bool = False


def resolve(ref: Ref, scope: Scope) -> Any:
    """The JSON value a reference names; raises Unresolved when it is not available."""
    if ref.kind in ("item", "prev"):
        if not scope.in_stage:
            raise Unresolved(f"${{{ref.source}}} is only available inside fanout stages")
        root = scope.item if ref.kind == "item" else scope.prev
    elif ref.kind == "input":
        root = scope.input
    else:
        table = scope.outputs if ref.kind == "step" else scope.carry
        if ref.name not in table:
            raise Unresolved(
                f"${{{ref.source}}}: reference output is unavailable "
                "(the source may have been skipped)"
            )
        root = table[ref.name]
    return _follow(root, ref)


def child(node: Any, seg: str | int) -> tuple[bool, Any]:
    """(found, value) of one path segment: a key of an object or an index of an array."""
    if isinstance(seg, str) and isinstance(node, dict) and seg in node:
        return True, node[seg]
    if isinstance(seg, int) and isinstance(node, list) and 0 <= seg < len(node):
        return True, node[seg]
    return False, None


def _follow(value: Any, ref: Ref) -> Any:
    for seg in ref.path:
        found, value = child(value, seg)
        if not found:
            raise Unresolved(f"${{{ref.source}}}: reference output is unavailable")
    return value


def render(text: str, scope: Scope) -> Any:
    """Render a template: a full-value reference keeps its JSON type; embedded ones
    interpolate (null -> "", strings raw, anything else as compact JSON)."""
    template = parse_template(text)
    if template.full is not None:
        return resolve(template.full, scope)
    out: list[str] = []
    for part in template.parts:
        out.append(part if isinstance(part, str) else interpolate(resolve(part, scope)))
    return "".join(out)


def render_task(text: str, scope: Scope) -> str:
    """Render a `do` task: like `render`, but a full-value reference must be a string."""
    value = render(text, scope)
    if not isinstance(value, str):
        raise Unresolved(f"{text}: a task that is one reference must resolve to a string")
    return value


def render_value(value: Any, scope: Scope) -> Any:
    """Render every string inside a JSON value (`with` blocks, `evaluate.in`)."""
    if isinstance(value, str):
        return render(value, scope)
    if isinstance(value, list):
        return [render_value(v, scope) for v in value]
    if isinstance(value, dict):
        return {k: render_value(v, scope) for k, v in value.items()}
    return value


def interpolate(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return to_json(value)


def string_leaves(value: Any, path: str) -> list[tuple[str, str]]:
    """(path, string) for every string inside a JSON value, in document order."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in string_leaves(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in string_leaves(v, f"{path}.{k}")]
    return []
