"""Scope paths get the suite's one spelling and overlap exactly when the suite says
they do, over generated Windows, UNC, device and POSIX spellings."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

from exo.control import scope

PIECES = ["a", "B", "src", "C:", "c:", "z:", "\\", "/", "//", ".", "..", "?", "unc", "UNC",
          "Srv", "\u00e9", "e\u0301", "\u00df", "SS", "x.py", "\\\\?\\", "//./"]

_ORACLE = r"""
import json, sys
from vivary_core.control_scope import _normalize_scope_path, scopes_overlap
paths, pairs = json.load(sys.stdin)
print(json.dumps([[_normalize_scope_path(p) for p in paths],
                  [scopes_overlap(a, b) for a, b in pairs]]))
"""


def _paths(rng: random.Random, count: int) -> list[str]:
    found = []
    while len(found) < count:
        path = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))
        if path == path.strip():
            found.append(path)
    return found


def test_normalization_and_overlap_match_the_suite(upstream: Callable[[str], Path]) -> None:
    rng = random.Random(18)
    paths = _paths(rng, 2000)
    pairs = [
        [{"project": "p", "paths": rng.sample(paths, rng.randint(1, 3))},
         {"project": rng.choice(["p", "p", "q"]), "paths": rng.sample(paths, rng.randint(1, 3))}]
        for _ in range(2000)
    ]
    python = upstream("exo").parent / "python"
    proc = subprocess.run([str(python), "-I", "-c", _ORACLE], input=json.dumps([paths, pairs]),
                          capture_output=True, text=True, check=True)
    normalized, overlaps = json.loads(proc.stdout)
    assert [scope.normalize_path(p) for p in paths] == normalized
    ours = [bool(scope.overlapping(scope.normalize(a), [scope.normalize(b)])) for a, b in pairs]
    assert ours == overlaps
    assert 0 < sum(overlaps) < len(overlaps)


def test_disjointness_agrees_with_pairwise_overlap() -> None:
    rng = random.Random(7)
    paths = _paths(rng, 300)
    for _ in range(300):
        scopes = [scope.normalize({"project": rng.choice("pq"),
                                   "paths": rng.sample(paths, rng.randint(1, 2))})
                  for _ in range(rng.randint(1, 4))]
        pairwise = not any(scope.overlapping(a, [b]) for i, a in enumerate(scopes)
                           for b in scopes[i + 1:])
        assert scope.pairwise_disjoint(scopes) == pairwise, scopes
