"""exo's view of a workspace: its repository, work items and edges, read through tropo.

Board and conflicts read the working tree (what the person sees, as vivary-exo does);
a claim reads HEAD, because the claim commit is made from HEAD.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from exo.claims import ClaimRefused
from exo.items import WORK_FOLDER, WorkItem, is_work_item, work_items
from tropo.check.graph import Graph
from tropo.check.workspace import ConfigError, Source, SourceError, Workspace, open_workspace
from tropo.git import objects
from tropo.git.repo import NotARepository, require, workdir
from tropo.git.types import Commit, Repository, Tree


class WorkspaceError(Exception):
    """No usable workspace or repository (exit 2)."""


@dataclass
class View:
    ws: Workspace
    repo: Repository
    tree: Tree | None  # the commit tree read, None for the working tree

    @cached_property
    def graph(self) -> Graph:
        try:
            return self.ws.graph()
        except (ConfigError, SourceError) as exc:
            raise WorkspaceError(str(exc)) from exc

    @cached_property
    def prefix(self) -> str:
        """The workspace root relative to the repository root: "" or "dir/"."""
        rel = Path(self.ws.root).resolve().relative_to(workdir(self.repo)).as_posix()
        return "" if rel == "." else f"{rel}/"

    @property
    def items(self) -> list[WorkItem]:
        return work_items(self.graph.nodes.values())

    @property
    def edges(self) -> list[tuple[str, str]]:
        return [(e.src, e.dst) for e in self.graph.edges]

    def claim_target(self, item_id: str) -> str:
        """The repository path of work item ``item_id``, or why it cannot be claimed."""
        node = self.graph.nodes.get(item_id)
        if node is None:
            self._refuse_symlink(f"{WORK_FOLDER}/{item_id}.md")
            raise ClaimRefused(f"no work item with id {item_id!r}")
        if not is_work_item(node.path):
            raise ClaimRefused(f"{item_id!r} is not a work item under {WORK_FOLDER}/")
        self._refuse_symlink(node.path)
        config = self.ws.schema.for_dir(posixpath.dirname(node.path))
        if "assignee" not in config.fields_for(node.type)[1]:
            raise WorkspaceError("assignee is not declared for this workspace; "
                                 f'add packs = ["coordination"] to {self.ws.config_file}')
        return self.prefix + node.path

    def _refuse_symlink(self, path: str) -> None:
        if self.tree is None or "\0" in path or ".." in path.split("/"):
            return
        found = objects.tree_file(self.repo, self.tree, self.prefix + path)
        if found is not None and found.filemode == objects.LINK:
            raise ClaimRefused(f"{path}: refusing to claim symlinked or out-of-workspace file")


def open_repo(root: Path | None) -> Repository:
    try:
        return require(root if root is not None else Path.cwd())
    except NotARepository as exc:
        raise WorkspaceError(f"{exc}; exo works on a workspace inside a git repository") from exc


def _open(root: Path | None, at_head: bool) -> View:
    repo = open_repo(root)
    tree = None
    source = Source.worktree()
    if at_head:
        if repo.head_is_unborn:
            raise WorkspaceError("the repository has no commits yet; commit the workspace first")
        commit = repo.head.peel(Commit)
        tree, source = commit.tree, Source.at(str(commit.id))
    try:
        return View(open_workspace(root, source), repo, tree)
    except (ConfigError, SourceError) as exc:
        raise WorkspaceError(str(exc)) from exc


def load_worktree(root: Path | None) -> View:
    """The workspace as the working tree has it."""
    return _open(root, at_head=False)


def load_at_head(root: Path | None) -> View:
    """The workspace as HEAD records it (what a claim commit starts from)."""
    return _open(root, at_head=True)
