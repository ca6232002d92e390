"""``tropo diff`` from the touched part of two graphs must print exactly what the whole
graphs give (``--no-cache``), for every kind of side, after any sequence of changes."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tests.support.vault_walks import answered, random_step, vault_repo
from tests.support.vaults import make_vault, tropo
from tropo.git.snapshot import Source
from tropo.review import statediff


def _diffs(repo: Path) -> list[list[str]]:
    commits = int(git(repo, "rev-list", "--count", "HEAD").strip())
    sides = [["--staged"], ["HEAD"]] + ([["HEAD~1..HEAD"], ["HEAD~1"]] if commits > 1 else [])
    return [[*side, fmt] for side in sides for fmt in ("--json", "--markdown")]


@pytest.mark.parametrize("seed", range(int(os.environ.get("TROPO_FUZZ_SEEDS", "3"))))
@pytest.mark.parametrize("subdir", ["", "kb/vault"])
def test_touched_shapes_diff_like_whole_graphs(tmp_path: Path, seed: int, subdir: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    taken = answered(monkeypatch, statediff, "shapes")
    repo, root = vault_repo(tmp_path, subdir)
    commit_all(repo)
    rng = random.Random(seed)
    for n in range(25):
        step = random_step(rng, repo, root)
        for args in _diffs(repo):
            want = tropo("diff", *args, "--no-cache", cwd=root)
            assert tropo("diff", *args, cwd=root) == want, (n, step, args)
    assert any(taken)  # the touched way answered, not only the whole one


def test_a_removed_node_breaks_the_refs_into_it(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    (repo_dir / "people" / "jeff.md").unlink()
    write_files(repo_dir, {"projects/tropo/README.md": "---\nstatus: active\nowner: ghost\n---\n"})
    commit_all(repo_dir)
    assert statediff.shapes(repo_dir, Source.at("HEAD~1"), Source.at("HEAD")) is not None
    code, out, _ = tropo("diff", "HEAD~1..HEAD", "--fail-on", "broken", cwd=repo_dir)
    assert code == 1
    assert "BROKEN 2026-06-12-kickoff --attendees--> jeff  (target gone)" in out
    assert "edge + tropo --owner--> ghost  (broken)" in out

