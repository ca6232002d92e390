"""A small coordination workspace that vivary-tropo 0.5 and our tropo both read."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.support.repos import commit_all, git, write_files
from tests.support.workspaces import copy_of

ITEM = "changes/item.md"

CONFIG = """version = 1
packs = ["coordination"]
exclude = ["README.md"]

[base]
derive = ["id", "title"]
allow_untyped = true

[types.module]
folder = "modules"
required = { status = "enum:active|draft" }

[types.implementation_slice]
folder = "changes"
required = { status = "enum:planned|active|done|blocked" }
optional = { modules = "ref-list", gates = "ref-list", verification = "ref" }

[types.gate]
folder = "gates"
required = { status = "enum:open|approved" }

[types.verification]
folder = "verification"
required = { status = "enum:planned|passed" }
"""


def _change(status: str | None, refs: str = "", extra: str = "") -> str:
    lines = [f"status: {status}"] if status else []
    lines += [ln for ln in (refs, extra) if ln]
    return "---\n" + "".join(f"{ln}\n" for ln in lines) + "---\n# Change\n"


def write_workspace(root: Path, coordination: bool = True) -> None:
    config = CONFIG if coordination else CONFIG.replace('packs = ["coordination"]\n', "")
    write_files(root, {
        "tropo.toml": config,
        "README.md": "# ws\n",
        "modules/core.md": "---\nstatus: active\n---\n# Core\n",
        "modules/api.md": "---\nstatus: active\n---\n# API\n",
        "gates/human.md": "---\nstatus: open\n---\n# Human\n",
        "verification/smoke.md": "---\nstatus: planned\n---\n# Smoke\n",
        ITEM: _change("active", "modules: [core]", "gates: [human]"),
        "changes/bravo.md": _change("active", "modules: [core, api]"),
        "changes/charlie.md": _change("active", "modules: [api]", "verification: smoke"),
        "changes/delta.md": _change("planned", "modules: [core]", "assignee: dora"),
        "changes/echo.md": _change("active", "modules: [ghost]"),
        "changes/foxtrot.md": _change("active", "modules: [ghost, core]"),
        "changes/golf.md": "# Golf, no frontmatter\n",
        "changes/hotel.md": _change("done", extra="assignee: hank"),
        "changes/nested/india.md": _change("blocked", "gates: [human]"),
    })


def make_remote(tmp_path: Path) -> Path:
    """``tmp_path/remote.git``: a bare repository (the shared remote) whose ``main`` holds
    the workspace; built once per process and copied (a bare repository names no path)."""
    return copy_of("coordination-remote", tmp_path / "remote.git", _seeded_remote)


def _seeded_remote(bare: Path) -> None:
    git(bare.parent, "init", "-q", "--bare", str(bare))
    with tempfile.TemporaryDirectory() as scratch:
        seed = Path(scratch) / "seed"
        git(bare.parent, "clone", "-q", str(bare), str(seed))
        write_workspace(seed)
        commit_all(seed)
        git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")


def clone(remote: Path, name: str) -> Path:
    dest = remote.parent / name
    git(remote.parent, "clone", "-q", str(remote), str(dest))
    return dest
