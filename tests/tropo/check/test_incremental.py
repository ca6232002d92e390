"""A whole-workspace check has three ways to its answer (stored results, a tree state
patched with what changed, every document): on every source, after any sequence of
edits, stages, commits and resets, they must say exactly what ``--no-cache`` says."""

from __future__ import annotations

import marshal
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import astuple, replace
from pathlib import Path
from typing import Any

import pytest

from tests.support.repos import commit_all, git, write_files
from tests.support.vault_walks import answered, random_step, vault_repo
from tests.support.vaults import drop_answers, make_vault, tropo_json
from tropo.check import incremental
from tropo.check.checkstate import CheckState
from tropo.check.config import ConfigError
from tropo.check.graph import Graph
from tropo.check.workspace import Workspace, open_workspace
from tropo.git import diff as gitdiff
from tropo.git.snapshot import Source, SourceError


def _slow(root: Path, source: Source) -> tuple[Any, ...]:
    ws = open_workspace(root, source, use_cache=False)
    report = ws.check()
    return report.checked, report.clean, [astuple(f) for f in report.findings], ws.config.strict


def _fast(root: Path, source: Source) -> tuple[Any, ...]:
    outcome = incremental.check(root, source)
    s = outcome.summary
    return s.checked, s.clean, [astuple(f) for f in s.findings], outcome.strict


def _sources(repo: Path) -> list[Source]:
    has_head = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=repo,
                              capture_output=True, check=False).returncode == 0
    return [Source.worktree(), Source.index()] + ([Source.at("HEAD")] if has_head else [])


def _answer(way: Callable[[Path, Source], tuple[Any, ...]], root: Path, source: Source) -> tuple[Any, ...]:
    try:
        return way(root, source)
    except (ConfigError, SourceError) as exc:
        return (type(exc).__name__, str(exc))


def _agree(repo: Path, root: Path, step: str) -> None:
    for source in _sources(repo):
        want = _answer(_slow, root, source)
        assert _answer(_fast, root, source) == want, (step, source)
        assert _answer(_fast, root, source) == want, (step, source, "second run")


@pytest.mark.parametrize("seed", range(int(os.environ.get("TROPO_FUZZ_SEEDS", "4"))))
@pytest.mark.parametrize("subdir", ["", "kb/vault"])
def test_every_way_agrees_with_no_cache(tmp_path: Path, seed: int, subdir: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    patched = answered(monkeypatch, incremental, "patched_state")
    repo, root = vault_repo(tmp_path, subdir)
    rng = random.Random(seed)
    _agree(repo, root, "fresh, no commit")
    commit_all(repo)
    for n in range(30):
        step = random_step(rng, repo, root)
        _agree(repo, root, f"{n}: {step}")
    assert any(patched)  # the patched way was taken, not only the fallbacks


def _graph(ws: Workspace, built: Callable[[Workspace], Graph]) -> tuple[Any, ...]:
    try:
        g = built(ws)
    except (ConfigError, SourceError) as exc:
        return (type(exc).__name__, str(exc))
    return ([n.as_dict() for n in sorted(g.nodes.values(), key=lambda n: n.id)],
            [e.as_dict() for e in g.edges])


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("subdir", ["", "kb/vault"])
def test_the_graph_from_the_check_state_is_the_graph_of_every_document(
        tmp_path: Path, seed: int, subdir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `tropo graph` and `blast` show, from the warm check's state (patched with
    what differs from HEAD), equals the graph built from every document read again."""
    patched = answered(monkeypatch, incremental, "patched_state")
    repo, root = vault_repo(tmp_path, subdir)
    rng = random.Random(seed)
    commit_all(repo)
    for n in range(20):
        step = random_step(rng, repo, root)
        for source in _sources(repo):
            try:
                slow, fast = open_workspace(root, source, use_cache=False), open_workspace(root, source)
            except (ConfigError, SourceError):
                continue
            assert _graph(fast, incremental.graph) == _graph(slow, Workspace.graph), (n, step, source)
    assert any(patched)  # the state's way was taken, not only the fallback


def test_a_new_commit_is_brought_forward_from_the_last_tree(repo_dir: Path) -> None:
    """After a commit, the tree state is derived from the stored one, not rebuilt."""
    make_vault(repo_dir)
    commit_all(repo_dir)
    assert incremental.check(repo_dir, Source.worktree()).summary.findings == []
    states = next((repo_dir / ".git" / "vivary").glob("states.v*"))
    (first,) = states.iterdir()
    state = CheckState.from_record(marshal.loads(first.read_bytes()))
    assert state is not None
    planted = replace(state, own={"people/jeff.md": [("people/jeff.md", 1, "error", "E101", "planted")]})
    first.write_bytes(marshal.dumps(planted.to_record()))
    write_files(repo_dir, {"meetings/new.md": "---\ndate: 2026-06-13\n---\n"})
    commit_all(repo_dir)
    outcome = incremental.check(repo_dir, Source.worktree())
    # the planted finding travelled: the new tree was patched from the stored one
    assert [f.code for f in outcome.summary.findings] == ["E101"]
    assert len(list(states.iterdir())) == 2


def test_a_head_that_moved_while_git_status_ran_is_not_taken_for_the_new_one(
        repo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold check makes HEAD's state while ``git status`` runs; when a commit lands in
    between, the state of the commit status saw is the one patched."""
    make_vault(repo_dir)
    commit_all(repo_dir)
    before = gitdiff.head_tree(repo_dir)
    write_files(repo_dir, {"people/ann.md": "---\nrelationship: x\nmanager: nobody\n---\n"})
    commit_all(repo_dir)
    monkeypatch.setattr(gitdiff, "head_tree", lambda top: before)  # as if read just before the commit
    assert _fast(repo_dir, Source.worktree()) == _slow(repo_dir, Source.worktree())
    assert len(list(next((repo_dir / ".git" / "vivary").glob("states.v*")).iterdir())) == 2


def _modules_loaded_by_check(repo: Path) -> str:
    probe = ("import sys; from tropo.cli.main import main\n"
             "try:\n    main(['check', '--quiet'])\nexcept SystemExit: pass\n"
             "print(sorted(m for m in ('pygit2', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True,
                         check=True).stdout
    return out.strip().splitlines()[-1]


def test_a_warm_or_clean_cold_check_imports_no_git_bindings_nor_yaml(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    _modules_loaded_by_check(repo_dir)  # the first check stores its answer and HEAD's state
    assert _modules_loaded_by_check(repo_dir) == "[]"  # answered from the stored result
    write_files(repo_dir, {"people/jeff.md": "---\nrelationship: peer\n---\n# Jeff\n"})
    assert _modules_loaded_by_check(repo_dir) == "[]"  # HEAD's state patched with one file
    drop_answers(repo_dir)
    assert _modules_loaded_by_check(repo_dir) == "[]"  # HEAD's documents from the memo of analyses
    shutil.rmtree(repo_dir / ".git" / "vivary")
    assert "pygit2" in _modules_loaded_by_check(repo_dir)  # HEAD's jeff.md is not the work tree's
    git(repo_dir, "checkout", "--", "people/jeff.md")
    shutil.rmtree(repo_dir / ".git" / "vivary")
    assert _modules_loaded_by_check(repo_dir) == "[]"  # every blob of HEAD read from the work tree


def test_results_that_used_file_dates_are_not_kept(repo_dir: Path) -> None:
    make_vault(repo_dir, {"people/dated.md": "---\nrelationship: x\ncreated: 2020-01-01\n---\n"})
    commit_all(repo_dir)
    incremental.check(repo_dir, Source.worktree())
    vivary = repo_dir / ".git" / "vivary"
    assert not [p for p in vivary.glob("results.v*/*")]
    # the tree is marked as dated, so later checks go straight to every document
    assert [p.read_bytes() for p in vivary.glob("states.v*/*")] == [marshal.dumps("dated")]


def test_a_head_without_config_falls_back_to_every_document(repo_dir: Path) -> None:
    """As right after `create-vivary adopt`: the config exists only in the working tree."""
    write_files(repo_dir, {"notes/a.md": "# a\n"})
    commit_all(repo_dir)
    make_vault(repo_dir)
    for _ in range(2):
        assert _fast(repo_dir, Source.worktree()) == _slow(repo_dir, Source.worktree())
    states = list((repo_dir / ".git" / "vivary").glob("states.v*/*"))
    assert [marshal.loads(p.read_bytes()) for p in states] == ["config error"]


def test_a_stored_tree_that_git_no_longer_has_is_passed_over(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    incremental.check(repo_dir, Source.worktree())
    (state,) = next((repo_dir / ".git" / "vivary").glob("states.v*")).iterdir()
    state.rename(state.with_name(state.name.rpartition("-")[0] + "-" + "0" * 40))
    write_files(repo_dir, {"people/ann.md": "---\nrelationship: x\n---\n"})
    commit_all(repo_dir)
    assert _fast(repo_dir, Source.worktree()) == _slow(repo_dir, Source.worktree())


def test_a_private_folder_planted_as_a_link_is_never_written_through(repo_dir: Path, tmp_path: Path) -> None:
    make_vault(repo_dir, {"meetings/a.md": "---\ndate: 2026-01-01\nattendees: [ghost]\n---\n"})
    commit_all(repo_dir)
    expected = tropo_json("check", "--no-cache", cwd=repo_dir)
    outside = tmp_path / "outside"
    outside.mkdir()
    private = repo_dir / ".git" / "vivary"
    if private.exists():
        shutil.rmtree(private)
    private.symlink_to(outside, target_is_directory=True)
    for source in ([], ["--staged"], ["--rev", "HEAD"]):
        assert tropo_json("check", *source, cwd=repo_dir) == expected  # checked, only uncached
    assert list(outside.iterdir()) == []
