"""Field specs: the small type language of ``tropo.toml`` and the check of one value."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from tropo.check.ids import is_slug

DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DATETIME_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$"
)
URL_RE = re.compile(r"^https?://\S+$")

SCALAR_SPECS = frozenset(
    {"string", "date", "datetime", "slug", "ref", "url", "bool", "number", "any"}
)
LIST_SPECS = frozenset({"list", "string-list", "ref-list"})
EDGE_SPECS = frozenset({"ref", "ref-list"})


KNOWN = tuple(sorted(SCALAR_SPECS | LIST_SPECS))  # and enum:a|b, as an error message lists them


def is_known(spec: str) -> bool:
    return spec in SCALAR_SPECS or spec in LIST_SPECS or spec.startswith("enum:")


def enum_values(spec: str) -> set[str] | None:
    return set(spec[5:].split("|")) if spec.startswith("enum:") else None


def tightens(old: str, new: str) -> bool:
    """Whether ``new`` admits no value ``old`` rejected (equal, or a narrower enum)."""
    if old == new:
        return True
    a, b = enum_values(old), enum_values(new)
    return a is not None and b is not None and b <= a


def _kind(value: Any) -> str:
    return type(value).__name__


Check = Callable[[Any], "str | None"]  # why a value does not conform, or None


@functools.cache
def checker(spec: str) -> Check:
    """The check of one spec, decided once per spec rather than per value: why a value
    does not conform to ``spec``, or None when it does (null always does: emptiness is
    the required-field check's business)."""
    if spec == "any":
        return lambda value: None
    if spec.startswith("enum:"):
        allowed = spec[5:].split("|")
        members, shown = frozenset(allowed), ", ".join(allowed)

        def enum(value: Any) -> str | None:
            if value is None or str(value) in members:
                return None
            return f"expected one of [{shown}], got {value!r}"
        return enum
    if spec == "string":  # the most common spec: one test
        return lambda value: (f"expected a string, got a {_kind(value)}"
                              if isinstance(value, (list, dict)) else None)
    if spec == "ref-list":
        return _ref_list()
    return functools.partial(_problem, spec=spec)


_SLUGS_KEPT = 1 << 17


def _ref_list() -> Check:
    """The ``ref-list`` check, remembering the items it found to be slugs: a workspace's
    lists name the same few thousand ids again and again (195k items at 20k documents),
    and a list of known ones needs one set test, not a slug test per item."""
    slugs: set[str] = set()

    def ref_list(value: Any) -> str | None:
        if value.__class__ is list:
            try:
                if slugs.issuperset(value):
                    return None
            except TypeError:  # an unhashable item (a nested list or map)
                pass
        problem = _problem(value, "ref-list")
        if problem is None and value is not None:
            if len(slugs) > _SLUGS_KEPT:
                slugs.clear()
            slugs.update(value)
        return problem

    return ref_list


def _problem(value: Any, spec: str) -> str | None:
    if value is None:
        return None
    composite = isinstance(value, (list, dict))
    if spec == "string":
        return f"expected a string, got a {_kind(value)}" if composite else None
    if spec in LIST_SPECS:
        return _list_problem(value, spec)
    if spec in ("slug", "ref"):
        return None if is_slug(value) else f"expected a {spec} (lowercase a-z 0-9 . _ -), got {value!r}"
    if spec == "date":
        if composite:
            return f"expected a date (YYYY-MM-DD), got a {_kind(value)}"
        return None if DATE_RE.match(str(value)) else f"expected YYYY-MM-DD, got {value!r}"
    if spec == "datetime":
        return None if DATETIME_RE.match(str(value)) else (
            f"expected ISO-8601 datetime, got {value!r}"
        )
    if spec == "url":
        ok = isinstance(value, str) and URL_RE.match(value)
        return None if ok else f"expected a URL (http/https), got {value!r}"
    if spec == "bool":
        return None if isinstance(value, bool) else f"expected true/false, got {value!r}"
    if spec == "number":
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if number else f"expected a number, got {value!r}"
    return f"unknown field spec {spec!r}"


def _list_problem(value: Any, spec: str) -> str | None:
    if not isinstance(value, list):
        return f"expected a list, got {_kind(value)} {value!r}"
    if spec == "list":
        return None
    for item in value:
        if isinstance(item, (list, dict)):
            return "expected a flat list"
        if spec == "ref-list" and not is_slug(item):
            return f"expected a list of refs (slugs), got item {item!r}"
    return None
