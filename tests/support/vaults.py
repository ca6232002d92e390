"""Vault workspaces (a typed vault, a workspace to search) and a tropo CLI runner."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.support.console import run
from tests.support.repos import write_files
from tropo.cli.main import main

VAULT_CONFIG = """\
version = 1
[base]
derive = ["id", "title", "created", "updated"]
optional = { tags = "string-list" }
allow_untyped = true

[types.person]
folder = ["people", "contacts"]
required = { relationship = "string" }

[types.project]
folder = "projects"
required = { status = "enum:active|paused|done" }
optional = { owner = "ref" }

[types.decision]
folder = "decisions"
required = { status = "enum:proposed|accepted|superseded", date = "date" }
optional = { supersedes = "ref", related = "ref-list" }

[types.meeting]
folder = "meetings"
required = { date = "date" }
optional = { project = "ref", attendees = "ref-list", url = "url", minutes = "number" }
"""

VAULT = {
    "tropo.toml": VAULT_CONFIG,
    "people/jeff.md": "---\nrelationship: self\n---\n# Jeff\n",
    "projects/tropo/README.md": "---\nstatus: active\nowner: jeff\n---\n# Tropo\n",
    "projects/tropo/decisions/0001-folder-as-type.md":
        "---\nstatus: accepted\ndate: 2026-06-12\n---\n# Folder as type\n",
    "meetings/2026-06-12-kickoff.md":
        "---\ndate: 2026-06-12\nproject: tropo\nattendees: [jeff]\n---\n# Kickoff\n",
}


# A workspace to search: ranked fields, a broken reference, CRLF and accents, an empty note.
SEARCH_CONFIG = """\
version = 1
[base]
derive = ["id", "title"]
optional = { tags = "string-list" }
[types.decision]
folder = "decisions"
required = { status = "enum:proposed|accepted" }
optional = { affects = "ref-list" }
[types.module]
folder = "modules"
optional = { owner = "string", depends_on = "ref" }
"""

SEARCH = {
    "tropo.toml": SEARCH_CONFIG,
    "decisions/release-workflow.md":
        "---\nstatus: accepted\naffects: [agent-workspace, ghost]\ntags: [release, truth]\n---\n"
        "# Release workflow\n\nRelease truth is owned by the release workflow.\n"
        "Auth_token and authentication live elsewhere.\n",
    "decisions/old-release.md":
        "---\nstatus: proposed\naffects: [retrieval]\n---\n# Old release\n\n" + "filler words " * 40
        + "and at the very end the release truth again.\n",
    "modules/agent-workspace.md":
        "---\nowner: Release team\n---\n# Agent workspace\n\nThe workspace where agents run. "
        "Truth lives here; truthful notes.\n",
    "modules/retrieval.md": "---\ndepends_on: agent-workspace\n---\n# Retrieval\n\n"
                            "Retrieval of release notes. CAFÉ café Truth.\r\nSecond line\r\n",
    "notes/loose.md": "no heading, just release text about the truth and the release\n",
    "notes/empty.md": "---\ntags: [truth]\n---\n",
}


def make_vault(root: Path, extra: dict[str, str] | None = None) -> Path:
    write_files(root, {**VAULT, **(extra or {})})
    return root


def tropo(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run the CLI in-process (real code, real files); (exit code, stdout, stderr)."""
    runner = CliRunner()
    argv = list(args)
    if cwd is not None and "--root" not in argv and args and args[0] not in ("init",):
        argv += ["--root", str(cwd)]
    result = runner.invoke(main, argv, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def tropo_json(*args: str, cwd: Path) -> tuple[int, Any]:
    code, out, err = tropo(*args, "--json", cwd=cwd)
    assert out.strip(), err
    return code, json.loads(out)


def tropo_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`tropo ARGS` in ``cwd`` as a shell sees it (exit code, stdout, stderr), run in
    process; unlike `tropo`, no ``--root`` is added."""
    return run("tropo", *args, cwd=cwd)


def codes(payload: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["code"]) for f in payload["findings"]]


def drop_answers(repo: Path) -> None:
    """Delete the caches that answer a whole check before any document is looked at
    (stored results and tree states), so a test can watch the layers below them."""
    for pattern in ("results.v*", "states.v*"):
        for folder in (repo / ".git" / "vivary").glob(pattern):
            shutil.rmtree(folder)
