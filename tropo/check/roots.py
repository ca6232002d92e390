"""Where a workspace's root is (the folder holding its config, found by walking up on
disk, in the index or in a tree), and which files tropo reads at all.

Kept apart from the schema so a front end can find the root (and report a missing or
competing one), or tell whether a changed file matters, before loading anything else.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from tropo.git import diff as gitdiff
from tropo.git import gitcli

CONFIG_NAME = "tropo.toml"
THIN_CONFIG = ".vivary/workspace.toml"


def is_config(rel: str) -> bool:
    """Whether a workspace-relative path is (or would be) part of the schema."""
    return (posixpath.basename(rel) == CONFIG_NAME or rel == THIN_CONFIG
            or rel.endswith("/" + THIN_CONFIG) or rel.startswith(".tropo/"))


def read_by_tropo(rel: str) -> bool:
    """Whether a file's bytes can change what tropo says: documents and configs."""
    return rel.endswith((".md", ".markdown", ".toml"))


class ConfigError(Exception):
    """The schema cannot be used; the message is one actionable line."""


def find_root(start: Path) -> Path | None:
    """The workspace root on disk: the nearest ancestor of ``start`` holding a config;
    a thin root wins, two thin roots conflict."""
    d = start if start.is_dir() else start.parent
    thin: list[Path] = []
    legacy: Path | None = None
    for here in [d, *d.parents]:
        if (here / THIN_CONFIG).is_file():
            thin.append(here)
        if legacy is None and (here / CONFIG_NAME).is_file():
            legacy = here
    if len(thin) > 1:
        raise ConfigError("competing thin-v0.3 roots: " + ", ".join(map(str, thin)))
    return thin[0] if thin else legacy


def root_in(top: Path, start: Path, tree: str | None = None) -> Path | None:
    """The root for ``--staged`` (or ``--rev``, given its ``tree``): the nearest folder
    from ``start`` up to ``top`` whose config the index (or tree) holds as a file, not as
    a symlink. Asked of git in one listing of the candidate paths (of a tree, in process)."""
    try:
        parts = start.relative_to(top).parts
    except ValueError:
        return None
    dirs = ["/".join(parts[:depth]) for depth in range(len(parts), -1, -1)]
    wanted = [posixpath.join(d, name) for d in dirs for name in (THIN_CONFIG, CONFIG_NAME)]
    try:
        present = _files_in_index(top, wanted) if tree is None else {
            c.rel for c in gitdiff.blobs_at(top, tree, wanted) if c.mode != gitdiff.LINK}
    except gitcli.GitError:
        return None
    for d in dirs:
        if posixpath.join(d, THIN_CONFIG) in present or posixpath.join(d, CONFIG_NAME) in present:
            return top.joinpath(*d.split("/")) if d else top
    return None


def _files_in_index(top: Path, wanted: list[str]) -> set[str]:
    present = set()
    for rec in gitcli.records(top, "ls-files", "--stage", "-z", "--", *(f":(literal){w}" for w in wanted)):
        meta, _, path = rec.partition("\t")
        if not meta.startswith("120000"):  # a symlinked config is not read
            present.add(path)
    return present
