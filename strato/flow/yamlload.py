"""Reading spec YAML safely and the way Stratum's JavaScript loader reads it.

YAML 1.2 core scalars only (`yes`/`on` stay strings, no timestamps), duplicate keys
refused, and a bounded walk over the result so alias bombs and deep nesting are
refused instead of expanded."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_NODES = 2_000_000
MAX_DEPTH = 256
MAX_BYTES = 16 * 1024 * 1024


class SpecYAMLError(ValueError):
    """The text is not a readable YAML document (one-line message)."""


class SpecReadError(OSError):
    """The file cannot be read as a spec: missing, not a regular file, too big, not UTF-8."""


def read_spec_file(path: Path) -> str:
    """A spec file's text: a regular file, at most 16 MiB, UTF-8 (never blocks on a FIFO
    or reads a device without end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SpecReadError(f"cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SpecReadError("not a regular file")
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise SpecReadError("larger than 16 MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecReadError("not UTF-8 text") from None


_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CoreLoader(_Base):  # type: ignore[misc]
    """SafeLoader with the YAML 1.2 core schema's implicit scalars."""


_CoreLoader.yaml_implicit_resolvers = {}
_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("tag:yaml.org,2002:null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)",
        "-+0123456789.",
    ),
]
for _tag, _pattern, _first in _RESOLVERS:
    _CoreLoader.add_implicit_resolver(_tag, re.compile(rf"^(?:{_pattern})$"), list(_first))


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    if len(text.lstrip("+-")) > 4000:
        raise SpecYAMLError(f"line {node.start_mark.line + 1}: integer literal too long")
    return int(text)


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=False)
        if not isinstance(key, str):
            key = _key_text(key, key_node)
        if key in seen:
            raise SpecYAMLError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        seen.add(key)
        out[key] = loader.construct_object(value_node, deep=False)
    return out


def _key_text(key: Any, node: yaml.Node) -> str:
    """JavaScript object keys are strings: `1:` becomes "1", `true:` becomes "true"."""
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if isinstance(key, int | float):
        return str(key)
    raise SpecYAMLError(f"line {node.start_mark.line + 1}: mapping keys must be scalars")


_CoreLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_CoreLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def load_yaml(text: str) -> Any:
    """Parse one YAML document; raises SpecYAMLError with a one-line reason."""
    if len(text) > MAX_BYTES:
        raise SpecYAMLError("spec is larger than 16 MiB")
    try:
        data = yaml.load(text, Loader=_CoreLoader)
    except SpecYAMLError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecYAMLError(f"not valid YAML: {where}{problem}") from None
    except (RecursionError, MemoryError):
        raise SpecYAMLError("YAML nests too deeply") from None
    _check_bounded(data)
    return data


def _check_bounded(data: Any) -> None:
    """Walk the loaded value as if aliases were expanded, stopping at the first limit."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    visited = 0
    while stack:
        node, depth = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            raise SpecYAMLError("YAML expands to too many nodes (alias bomb?)")
        if depth > MAX_DEPTH:
            raise SpecYAMLError(f"YAML nests deeper than {MAX_DEPTH} levels (or is recursive)")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
