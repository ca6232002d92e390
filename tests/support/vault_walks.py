"""Random edits to a vault in a real repository, for the tests that hold a fast way to
an answer equal to the slow one after any sequence of changes."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.support.repos import git, write_files
from tests.support.vaults import make_vault


def vault_repo(tmp_path: Path, subdir: str) -> tuple[Path, Path]:
    """A new repository (no commit) with the vault at ``subdir``: (repo, workspace root)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    root = repo / subdir if subdir else repo
    make_vault(root)
    return repo, root


def answered(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[bool]:
    """Wrap ``module.name`` so each call records whether it gave an answer (not None)."""
    seen: list[bool] = []
    real = getattr(module, name)

    def recording(*args: Any) -> Any:
        found = real(*args)
        seen.append(found is not None)
        return found

    monkeypatch.setattr(module, name, recording)
    return seen


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
                      "---\nrelationship: x\ncreated: 2020-01-01\n---\n",
                      # refused by vivary-tropo's subset only (YAML reads them)
                      "---\nrelationship:\n- a\n---\n", "---\nrelationship:\n  - name: x\n---\n",
                      "---\nrelationship: x\nno colon\n---\n"])
    return f"people/{name}.md", bad


def random_step(rng: random.Random, repo: Path, root: Path) -> str:
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
