"""The held-out benchmark workspace: deterministic, shaped as promised (nested blocks,
comments, deep folders, broken documents), and read the same by every way of checking."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench import heldout
from tests.support.console import run
from tropo.check import frontmatter


def test_same_seed_same_documents_other_seed_other_ones() -> None:
    assert heldout.documents(300, 7) == heldout.documents(300, 7) != heldout.documents(300, 8)


def test_the_shape_is_not_the_generators() -> None:
    files = heldout.documents(2000, 7)
    docs = {rel: data for rel, data in files.items() if rel.endswith(".md")}
    assert max(rel.count("/") for rel in docs) >= 7
    text = b"\n".join(docs.values())
    assert b"\n# reviewed" in text and b"\n  cpu: " in text and b"    - eu-west" in text
    blocks = [frontmatter.split(data.decode("utf-8", "replace"))[0] for data in docs.values()]
    nested = sum(1 for b in blocks if b and any(isinstance(v, dict) for v in
                                                 (frontmatter._fast(b) or ({},))[0].values()))
    assert nested > 100  # nested maps the fast path reads


@pytest.mark.slow  # three commits, a gc and the racy-clean second: some seconds
def test_every_way_of_checking_agrees_on_its_findings(tmp_path: Path) -> None:
    ws = heldout.build(tmp_path / "held", 400)
    results = [run("tropo", "check", "--json", *extra, cwd=ws) for extra in
               ([], ["--no-cache"], [], ["--staged"], ["--rev", "HEAD"])]  # cold, uncached, warm, ...
    assert len({(r.returncode, r.stdout) for r in results}) == 1
    codes = Counter(f["code"] for f in json.loads(results[0].stdout)["findings"])
    assert results[0].returncode == 1 and codes["W220"] and codes["E101"]
