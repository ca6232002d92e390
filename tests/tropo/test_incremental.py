"""A whole-workspace check has three ways to its answer (stored results, a tree state
patched with what changed, every document): on every source, after any sequence of
edits, stages, commits and resets, they must say exactly what ``--no-cache`` says."""

from __future__ import annotations

import marshal
import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import astuple, replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import commit_all, git, write_files
from tests.tropo.helpers import drop_answers, make_vault
from tropo import incremental
from tropo.checkstate import CheckState
from tropo.config import ConfigError
from tropo.source import Source, SourceError
from tropo.workspace import open_workspace


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


def _doc(rng: random.Random, ids: list[str]) -> tuple[str, str]:
    kind = rng.choice(["person", "meeting", "project", "plain", "bad"])
    name = rng.choice(["ann", "bob", "cy", "dee", "jeff", "kickoff", "tropo", "x y"])
    if kind == "person":
        rel = rng.choice(["relationship: peer\n", "relationship:\n", "", "relationship: [1]\n"])
        return f"{rng.choice(['people', 'contacts'])}/{name}.md", f"---\n{rel}---\n# {name}\n"
    if kind == "meeting":
        refs = rng.sample([*ids, "ghost", "nobody"], k=min(2, len(ids) + 2))
        return f"meetings/{name}.md", f"---\ndate: 2026-06-12\nattendees: [{', '.join(refs)}]\n---\n"
    if kind == "project":
        owner = rng.choice([*ids, "ghost"])
        return f"projects/{name}/README.md", f"---\nstatus: active\nowner: {owner}\n---\n"
    if kind == "plain":
        return f"notes/{name}.md", "# just text\n"
    bad = rng.choice(["---\n[unclosed\n---\n", "---\n- a list\n---\n", "\xff\xfe not utf-8",
                      "---\nrelationship: x\ncreated: 2020-01-01\n---\n"])
    return f"people/{name}.md", bad


def _step(rng: random.Random, repo: Path, root: Path) -> str:
    docs = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md")
                  if ".git" not in p.parts and not p.is_symlink())
    ids = sorted({Path(d).stem for d in docs})
    op = rng.choice(["write", "write", "write", "delete", "move", "stage", "commit", "commit",
                     "link", "exclude", "archive", "reset", "outside"])
    if op == "write" or (op in ("delete", "move") and not docs):
        rel, text = _doc(rng, ids)
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text
                           else b"---\n\xff\xfe\n---\n")
        return f"write {rel}"
    if op == "delete":
        victim = root / rng.choice(docs)
        victim.unlink()
        return f"delete {victim}"
    if op == "move":
        src = rng.choice(docs)
        dst = root / rng.choice(["people", "meetings", "archive", "notes"]) / f"m{rng.randrange(99)}.md"
        dst.parent.mkdir(parents=True, exist_ok=True)
        (root / src).rename(dst)
        return f"move {src} {dst}"
    if op == "stage":
        git(repo, "add", "-A", "--", rng.choice([".", str(root / "people"), str(root / "meetings")]),
            check=False)
        return "stage"
    if op == "commit":
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", "step")
        return "commit"
    if op == "link":
        link = root / "people" / f"link{rng.randrange(3)}.md"
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(rng.choice(["../../outside.md", "jeff.md", "/etc/hostname"]), link)
        return f"link {link}"
    if op == "exclude":
        config = root / "tropo.toml"
        text = config.read_text()
        config.write_text(text.replace('exclude = ["archive"]\n', "") if "exclude" in text
                          else 'exclude = ["archive"]\n' + text)
        return "toggle exclude"
    if op == "archive":
        write_files(root, {f"archive/a{rng.randrange(5)}.md": "---\nbogus: [\n---\n"})
        return "archive"
    if op == "reset":
        count = int(git(repo, "rev-list", "--count", "--all", check=False).strip() or 0)
        if count > 1:
            git(repo, "reset", "-q", rng.choice(["--soft", "--mixed"]), "HEAD~1")
        return "reset"
    write_files(repo, {f"elsewhere/e{rng.randrange(3)}.md": "---\n[broken\n---\n"})
    return "outside the workspace"


@pytest.mark.parametrize("seed", range(int(os.environ.get("TROPO_FUZZ_SEEDS", "4"))))
@pytest.mark.parametrize("subdir", ["", "kb/vault"])
def test_every_way_agrees_with_no_cache(tmp_path: Path, seed: int, subdir: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    patched: list[bool] = []
    real = incremental.patched_state

    def counting(*args: Any) -> Any:
        state = real(*args)
        patched.append(state is not None)
        return state

    monkeypatch.setattr(incremental, "patched_state", counting)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    root = repo / subdir if subdir else repo
    make_vault(root)
    rng = random.Random(seed)
    _agree(repo, root, "fresh, no commit")
    commit_all(repo)
    for n in range(30):
        step = _step(rng, repo, root)
        _agree(repo, root, f"{n}: {step}")
    assert any(patched)  # the patched way was taken, not only the fallbacks


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


def _modules_loaded_by_check(repo: Path) -> str:
    probe = ("import sys; from tropo.cli import main\n"
             "try:\n    main(['check', '--quiet'])\nexcept SystemExit: pass\n"
             "print(sorted(m for m in ('pygit2', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True,
                         check=True).stdout
    return out.strip().splitlines()[-1]


def test_a_warm_check_imports_no_git_bindings_nor_yaml(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    _modules_loaded_by_check(repo_dir)  # the first check stores its answer and HEAD's state
    assert _modules_loaded_by_check(repo_dir) == "[]"  # answered from the stored result
    write_files(repo_dir, {"people/jeff.md": "---\nrelationship: peer\n---\n# Jeff\n"})
    assert _modules_loaded_by_check(repo_dir) == "[]"  # HEAD's state patched with one file
    drop_answers(repo_dir)
    assert "pygit2" in _modules_loaded_by_check(repo_dir)  # every document of HEAD read again


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
