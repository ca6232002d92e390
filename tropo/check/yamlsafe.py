"""PyYAML's C parser behind tropo's safety layer, for frontmatter the fast path declines.

Every plain scalar resolves to one tag so tropo's own scalar rules apply; anchors,
aliases, merge keys, tags other than the core ones and deep nesting are refused, so a
YAML bomb costs nothing. Imported only when some document needs it.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tropo.check.scalars import MAX_DEPTH, FrontmatterError, plain_scalar

_PLAIN = "!vivary/plain"
_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Resolves every plain scalar to one tag so we apply tropo's rules ourselves."""


_Loader.yaml_implicit_resolvers = {}
_Loader.add_implicit_resolver(_PLAIN, re.compile(r".*", re.S), None)


def _build(node: yaml.Node, seen: set[int], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise FrontmatterError("frontmatter nests too deeply", node.start_mark.line + 2)
    if id(node) in seen:
        raise FrontmatterError("YAML aliases are not allowed", node.start_mark.line + 2)
    seen.add(id(node))
    line = node.start_mark.line + 2
    if isinstance(node, yaml.ScalarNode):
        if node.tag == _PLAIN:
            return plain_scalar(node.value)
        if node.tag != _STR:
            raise FrontmatterError(f"YAML tag {node.tag!r} is not allowed", line)
        return node.value
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _SEQ:
            raise FrontmatterError(f"YAML tag {node.tag!r} is not allowed", line)
        return [_build(item, seen, depth + 1) for item in node.value]
    if isinstance(node, yaml.MappingNode):
        if node.tag != _MAP:
            raise FrontmatterError(f"YAML tag {node.tag!r} is not allowed", line)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            kline = key_node.start_mark.line + 2
            if not isinstance(key_node, yaml.ScalarNode):
                raise FrontmatterError("mapping keys must be scalars", kline)
            key = key_node.value  # keys are names: tropo never converts them
            if key == "<<" and key_node.tag == _PLAIN:
                raise FrontmatterError("YAML merge keys are not allowed", kline)
            if key in out:
                raise FrontmatterError(f"duplicate key {key!r}", kline)
            out[key] = _build(value_node, seen, depth + 1)
        return out
    raise FrontmatterError("unsupported YAML node", line)  # pragma: no cover


def load(block: str) -> tuple[dict[str, Any], dict[str, int]]:
    try:
        loader = _Loader(block)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(getattr(mark, "line", 0)) + 2
        problem = exc.problem or "invalid YAML"
        raise FrontmatterError(f"frontmatter is not valid YAML: {problem}", line) from exc
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"frontmatter is not valid YAML: {exc}", 2) from exc
    if node is None:
        return {}, {}
    anchor = _anchor_line(block) if "&" in block else None
    if anchor is not None:
        raise FrontmatterError("YAML anchors are not allowed", anchor)
    data = _build(node, set(), 0)
    if not isinstance(data, dict):
        raise FrontmatterError("frontmatter must be a mapping of key: value", 2)
    assert isinstance(node, yaml.MappingNode)
    return data, {k.value: k.start_mark.line + 2 for k, _ in node.value}


def _anchor_line(block: str) -> int | None:
    for event in yaml.parse(block, Loader=_Loader):
        if getattr(event, "anchor", None) is not None:
            return int(getattr(event.start_mark, "line", 0)) + 2
    return None
