"""Canonical JSON: the byte form every capsule, receipt and verdict fingerprint hashes.

The bytes must equal what a JavaScript `JSON.stringify` over key-sorted objects
produces, because Vivary's fingerprints were defined in Node first: keys sorted by
UTF-16 code units, no whitespace, JavaScript number formatting and escapes.
"""

from __future__ import annotations

import hashlib
import math
import re
from decimal import Decimal
from typing import Any

#: The largest integer a JavaScript number holds exactly; bodies beyond it are lossy.
MAX_SAFE_INTEGER = 2**53 - 1

_SURROGATE = re.compile("[\ud800-\udfff]")

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _escape_char(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x20 or 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return ch


# a character `_escape_char` changes: most strings have none and are taken whole
_ESCAPED = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def js_string(value: str) -> str:
    """`JSON.stringify` of a string: short escapes, lowercase `\\uXXXX` for control
    characters and lone surrogates, everything else raw."""
    if _ESCAPED.search(value) is None:
        return '"' + value + '"'
    return '"' + "".join(_escape_char(ch) for ch in value) + '"'


def _shortest_decimal(x: float) -> tuple[str, int]:
    """The shortest round-trip digits of a positive double, and the position of the
    decimal point relative to the first digit (ECMAScript's k digits and n)."""
    _, digit_tuple, exponent = Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


def js_number(value: int | float) -> str:
    """ECMAScript Number::toString for what `json.load` produced: big integers become
    the nearest double, NaN and infinities become `null` as `JSON.stringify` does."""
    if isinstance(value, int) and abs(value) <= 2**53:
        return str(value)
    try:
        x = float(value)
    except OverflowError:
        return "null"
    if not math.isfinite(x):
        return "null"
    if x == 0:
        return "0"
    if x < 0:
        return "-" + js_number(-x)
    digits, n = _shortest_decimal(x)
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    exponent = f"e{'+' if n >= 1 else '-'}{abs(n - 1)}"
    return (digits if k == 1 else digits[0] + "." + digits[1:]) + exponent


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def canonicalize(value: Any) -> str:
    """Sorted-key, whitespace-free JSON with JavaScript scalars. Raises TypeError on a
    non-string key or a value JSON cannot carry."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join([canonicalize(item) for item in value]) + "]"
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("object keys must be strings")
        keys = sorted(value, key=_utf16_key)
        return "{" + ",".join([f"{js_string(k)}:{canonicalize(value[k])}" for k in keys]) + "}"
    raise TypeError(f"cannot canonicalize {type(value).__name__}")


def _scalar_lossless(item: Any) -> bool:
    kind = type(item)
    if item is None or kind in (str, bool):
        return True
    if kind is int:
        return bool(abs(item) <= MAX_SAFE_INTEGER)
    return kind is float and math.isfinite(item)


def is_lossless(value: Any) -> bool:
    """Whether a JSON-like value has exactly one canonical form: finite numbers, integers
    within ±(2^53-1), string keys only, plain containers and no cycles. Iterative, so
    depth costs no stack."""
    open_containers: set[int] = set()
    stack: list[tuple[bool, Any]] = [(True, value)]
    while stack:
        entering, item = stack.pop()
        if not entering:
            open_containers.discard(id(item))
            continue
        if type(item) not in (list, dict):
            if not _scalar_lossless(item):
                return False
            continue
        if id(item) in open_containers:
            return False
        open_containers.add(id(item))
        stack.append((False, item))
        if type(item) is dict:
            if not all(type(key) is str for key in item):
                return False
            stack.extend((True, child) for child in item.values())
        else:
            stack.extend((True, child) for child in item)
    return True


def sha256_hex(text: str) -> str:
    """SHA-256 of the UTF-8 text, lone surrogates hashed as U+FFFD as Node does."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = _SURROGATE.sub("\ufffd", text).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def fingerprint(value: Any) -> str:
    """`sha256:` plus the hash of the canonical form: capsule, receipt, verdict bodies."""
    return "sha256:" + sha256_hex(canonicalize(value))


def deterministic_id(kind: str, identity: Any) -> str:
    """`<kind>_` plus 16 hex digits of the identity's canonical hash."""
    return f"{kind}_{sha256_hex(canonicalize(identity))[:16]}"


class DuplicateKeyError(ValueError):
    """A JSON object names one key twice, so which value it means is ambiguous."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads(..., object_pairs_hook=unique_keys)``: refuse duplicate keys rather
    than let the last one silently win, so a document has one meaning. The dict is built
    at C speed; only a document that names a key twice is walked, to name it."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {key!r}")
            seen.add(key)
    return found
