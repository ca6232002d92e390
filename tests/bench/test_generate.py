"""The benchmark's synthetic workspaces: the promised shape, deterministic, and holding
exactly the findings planted in them (as tropo and, when installed, vivary-tropo see)."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from bench import generate, run
from tests.support.repos import git


@pytest.mark.parametrize("nodes", [50, 1000, 20000])
def test_counts_add_up_to_the_requested_nodes(nodes: int) -> None:
    c = generate.Counts.of(nodes)
    assert 4 + c.modules + c.changes + c.decisions + c.verifications + c.gates == nodes
    assert c.changes > c.verifications > c.gates > 0 and c.modules >= 3
    assert len(generate.documents(nodes)) + 3 == nodes  # + AGENTS.md, STATE.md, context.md


def test_too_small_is_refused() -> None:
    with pytest.raises(ValueError):
        generate.Counts.of(49)


def test_same_seed_same_repository_other_seed_other_one(tmp_path: Path) -> None:
    heads = [git(generate.build(tmp_path / name, 120, seed), "rev-parse", "HEAD").strip()
             for name, seed in (("a", 1), ("b", 1), ("c", 2))]
    assert heads[0] == heads[1] != heads[2]


def _check(ws: Path, exe: Path | None = None) -> tuple[int, dict[str, object]]:
    argv = [str(exe or run.ours_tropo()), "check", "--json", "--root", str(ws)]
    proc = subprocess.run(argv, cwd=ws, capture_output=True, text=True, check=False)
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate.build(tmp_path_factory.mktemp("gen") / "ws", 400, seed=7)


def test_built_repository_is_committed_clean_and_shaped_like_the_coding_preset(built: Path) -> None:
    assert git(built, "rev-list", "--count", "HEAD").strip() == "5"
    assert git(built, "status", "--porcelain") == ""
    tracked = git(built, "ls-files").split()
    assert sum(p.endswith(".md") for p in tracked) == 400
    assert ".vivary/workspace.toml" in tracked and "AGENTS.md" in tracked
    assert f"{generate.RECORDS}/modules/{generate.HUB}/index.md" in tracked
    assert any(p.startswith("src/") for p in tracked)


def test_tropo_finds_exactly_the_planted_findings(built: Path) -> None:
    code, out = _check(built)
    assert code == 1 and out["checked"] == 400
    findings = out["findings"]
    assert isinstance(findings, list)
    assert Counter(f["code"] for f in findings) == Counter(generate.Counts.of(400).anomalies())


def test_vivary_tropo_agrees_on_the_generated_workspace(
        built: Path, upstream: Callable[[str], Path]) -> None:
    exe = upstream("tropo")
    ours, theirs = _check(built), _check(built, exe)
    assert ours[0] == theirs[0] == 1

    def key(out: dict[str, object]) -> set[tuple[str, int, str]]:
        rows = out["findings"]
        assert isinstance(rows, list)
        return {(f["path"], f["line"], f["code"]) for f in rows}

    assert key(ours[1]) == key(theirs[1])
