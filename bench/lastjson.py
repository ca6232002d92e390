"""The last JSON object in agent output: the linear finder against the greedy decoder it
replaced (json.raw_decode at every `{`), on hostile output of growing size, timed in the
same run. The greedy time grows with the square of the size, ours with the size.

    python -m bench.lastjson [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from strato.agents.lastjson import last_json_object


def greedy(text: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    found = None
    i = text.find("{")
    while i != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict):
            found = value
        i = text.find("{", end)
    return found


def median_s(fn: Callable[[str], Any], text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    answer = json.dumps({"ok": True})
    print(f"{'output':>10} {'greedy s':>10} {'linear s':>10} {'ratio':>8}")
    for kib in (16, 32, 64, 128):
        text = "{" * (kib * 1024) + answer
        assert last_json_object(text) == greedy(text) == {"ok": True}
        slow = median_s(greedy, text, args.repeat)
        fast = median_s(last_json_object, text, args.repeat)
        print(f"{kib:>7} KiB {slow:>10.3f} {fast:>10.3f} {slow / fast:>7.1f}x")


if __name__ == "__main__":
    main()
