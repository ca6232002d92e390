"""``create-vivary init``: a new workspace, its repository, its hooks, its first commit."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from create_vivary.plan import FileAction, Refused, actions_hash, file_actions, write
from create_vivary.scaffold import render
from hooks import install as hooks_install
from hooks.scripts import DEFAULT_HOOKS
from tropo.git import gitcli

COMMIT_MESSAGE = "Vivary workspace ({preset} preset, create-vivary)"
# Who makes the first commit on a machine with no git identity (as tropo.git.repo.signature).
FALLBACK_IDENTITY = ("-c", "user.name=vivary", "-c", "user.email=vivary@localhost")


@dataclass(frozen=True)
class InitPlan:
    root: Path
    preset: str
    project: str
    files: list[FileAction]
    git_init: bool
    commit: bool

    @property
    def hash(self) -> str:
        return actions_hash(self.files, git_init=self.git_init, commit=self.commit)

    def as_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "preset": self.preset,
            "project": self.project,
            "plan_hash": self.hash,
            "files": [f.as_json() for f in self.files],
            "git_init": self.git_init,
            "hooks": list(DEFAULT_HOOKS),
            "commit": self.commit,
        }


def _existing_entries(root: Path) -> list[str]:
    if not root.exists():
        return []
    if root.is_symlink() or not root.is_dir():
        raise Refused(f"target is not a real directory: {root}")
    return sorted(e for e in os.listdir(root) if e != ".git")


def _symlink_on_the_way(target: Path) -> Path | None:
    """The first symlink among the folders of ``target`` as it was given (relative: below
    the current directory; absolute: from ``/``), so ``a/link/ws`` cannot land elsewhere."""
    here = Path.cwd()  # an absolute target's first part replaces it
    for part in target.parts[:-1]:
        here = here / part
        if here.is_symlink():
            return here
    return None


def plan(target: Path, preset: str, project: str, *, force: bool, commit: bool) -> InitPlan:
    """Everything init would do; raises :class:`Refused` before any write."""
    link = _symlink_on_the_way(target)
    if link is not None:
        raise Refused(f"{link} is a symlink on the way to {target}; give the real path "
                      f"({link.resolve()})")
    root = target.absolute()
    entries = _existing_entries(root)
    if entries and not force:
        raise Refused(
            f"{root} is not empty ({len(entries)} entries); rerun with --force to overwrite "
            "scaffold files, or use `create-vivary adopt` to add to existing content"
        )
    actions = file_actions(root, render(preset, project), overwrite=True)
    git_init = not root.exists() or gitcli.toplevel(root) != root.resolve()
    return InitPlan(root, preset, project, actions, git_init, commit)


def apply(p: InitPlan) -> dict[str, object]:
    """Carry out a plan: files, ``git init``, hooks, and the first commit through them."""
    p.root.mkdir(parents=True, exist_ok=True)
    written = write(p.root, p.files)
    if p.git_init:
        gitcli.init(p.root)
    hooks = _install_hooks(p.root)
    sha = _first_commit(p.root, [f.path for f in p.files], p.preset) if p.commit else None
    return {**p.as_json(), "written": written, "hooks": hooks, "commit": sha}


def _install_hooks(root: Path) -> dict[str, str]:
    return dict(zip(DEFAULT_HOOKS, hooks_install.install(root, DEFAULT_HOOKS), strict=True))


def _first_commit(root: Path, paths: list[str], preset: str) -> str:
    """Commit what git does not ignore of ``paths``, through the hooks just installed."""
    to_add = sorted(set(paths) - gitcli.ignored(root, paths))
    gitcli.run(root, "add", "--", *to_add)
    who = () if gitcli.has_identity(root) else FALLBACK_IDENTITY
    try:
        gitcli.run(root, *who, "commit", "-q", "-m", COMMIT_MESSAGE.format(preset=preset))
    except gitcli.GitError as exc:
        raise Refused(f"workspace written, but the first commit failed: {exc}") from exc
    return gitcli.run(root, "rev-parse", "HEAD").strip()


def commit_seed(root: Path, paths: list[str], preset: str) -> dict[str, object]:
    """``--minimal --commit``: the thin seed as a repository with our hooks and a first commit."""
    if gitcli.toplevel(root) != root.resolve():
        gitcli.init(root)
    hooks = _install_hooks(root)
    return {"hooks": hooks, "commit": _first_commit(root, paths, preset)}
