"""Validation cost of large flow specs, as a ratio to merely parsing the same YAML with
PyYAML's C loader (the floor any YAML-based validator pays). Run: python -m bench.flowspec_validate
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import yaml

from strato.flow.validate import load_spec


def chain_spec(n: int) -> str:
    """n `do` steps, each after and referencing the previous one."""
    lines = [
        "version: 1", "contracts:", "  R:", "    text: string", "flows:", "  entry: main",
        "  main:", "    input:", "      topic: string", "    output:",
        f'      from: "${{s{n - 1}.output}}"', "      contract: R", "    steps:",
        "      - id: s0", '        do: "start ${input.topic}"', "        out: R",
    ]
    for i in range(1, n):
        lines += [f"      - id: s{i}", f"        after: [s{i - 1}]",
                  f'        do: "next ${{s{i - 1}.output.text}}"', "        out: R"]
    return "\n".join(lines) + "\n"


def best_of(fn: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print(f"{'steps':>7} {'parse (C loader)':>17} {'load_spec':>10} {'ratio':>6}")
    for n in (100, 1_000, 10_000):
        text = chain_spec(n)
        spec, errors = load_spec(text)
        assert spec is not None and not errors, errors
        base = best_of(partial(yaml.load, text, Loader=yaml.CSafeLoader))
        ours = best_of(partial(load_spec, text))
        print(f"{n:>7} {base:>16.3f}s {ours:>9.3f}s {ours / base:>6.2f}")


if __name__ == "__main__":
    main()
