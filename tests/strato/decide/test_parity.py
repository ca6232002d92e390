"""Side by side with vivary-strato 0.1.3: the same request files give the same decision
documents, byte for byte, and the same exit codes. Skips when the oracle is absent."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.decisions import corpus

DRIVER = Path(__file__).with_name("side_by_side.py")


def _run(python: Path | str, paths: list[str]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(python), str(DRIVER)],
        input=json.dumps(paths),
        capture_output=True,
        text=True,
        check=True,
    )
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


@pytest.mark.slow
def test_corpus_matches_upstream(tmp_path: Path, upstream: Callable[[str], Path]) -> None:
    upstream_python = upstream("python")
    cases = corpus()
    assert len(cases) >= 200
    assert len({name for name, _ in cases}) == len(cases), "case names are unique"
    paths = []
    for index, (_, text) in enumerate(cases):
        path = tmp_path / f"{index:04d}.json"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))

    ours, theirs = _run(sys.executable, paths), _run(upstream_python, paths)

    mismatches = [
        f"{name}: ours {mine} upstream {other}"
        for (name, _), mine, other in zip(cases, ours, theirs, strict=True)
        if mine != other
    ]
    assert not mismatches, "\n".join(mismatches[:10])
    # The corpus exercises every outcome, not just refusals.
    decisions = Counter(json.loads(result["stdout"])["decision"] for result in ours)
    codes = Counter(result["code"] for result in ours)
    assert {"act", "request_gate", "stop", "blocked"} <= set(decisions)
    assert codes[0] >= 40 and codes[2] >= 100
