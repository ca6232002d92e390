"""Order strings in one interpreter: vivary-core's collation when it is importable (the
oracle's Python), else ours. Reads a JSON list of strings on stdin; prints each string's
locale key (or ``"outside"`` for a string outside the collation domain) and the list in
path order."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def _suite() -> tuple[Callable[[str], Any], Callable[[str], Any], type[Exception]]:
    try:
        from vivary_core.collation import CollationDomainError, locale_sort_key
        from vivary_core.workspace_model import _path_sort_key
    except ImportError:
        from tropo.governed.collation import Uncollatable, locale_key, path_key

        return locale_key, path_key, Uncollatable
    return locale_sort_key, _path_sort_key, CollationDomainError


def main() -> None:
    locale_key, path_key, outside = _suite()
    strings = json.load(sys.stdin)
    keys: list[Any] = []
    for text in strings:
        try:
            keys.append(locale_key(text))
        except outside:
            keys.append("outside")
    print(json.dumps({"keys": keys, "order": sorted(strings, key=path_key)}))


if __name__ == "__main__":
    main()
