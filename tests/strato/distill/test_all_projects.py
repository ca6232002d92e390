"""`strato distill --all --projects-root DIR`: the seed's multi-project scan reads every
project folder under DIR at once, so a workflow repeated across projects is found where
no single project shows it three times."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from strato.proposals import store
from tests.support import console
from tests.support.transcripts import FLOW, OTHER, claude_session


def distill(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return console.run("strato", "distill", *args, cwd=cwd)


def test_all_scans_every_project_folder_under_the_root(ws: Path, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    claude_session(projects / "-work-alpha", "s0", tmp_path / "alpha", FLOW + OTHER + FLOW)
    claude_session(projects / "-work-beta", "s1", tmp_path / "beta", FLOW)
    everything = ["--all", "--projects-root", str(projects)]
    stats = json.loads(distill("stats", *everything, "--json", cwd=ws).stdout)
    assert stats["files"] == 2 and stats["calls"] == 10 and stats["foreign"] == 0
    assert stats["candidates"] == 1 and stats["applied"] is False
    for one in ("-work-alpha", "-work-beta"):  # one project at a time: calls made elsewhere do not count
        alone = json.loads(distill("stats", "--project", str(projects / one), "--json", cwd=ws).stdout)
        assert alone["calls"] == 0 and alone["candidates"] == 0
    top = json.loads(distill("top", *everything, "--json", cwd=ws).stdout)
    assert top["workflows"][0]["count"] == 3 and top["workflows"][0]["sessions"] == 2
    assert store.all_records(store.sidecar(ws)) == []
    extracted = json.loads(distill("extract", *everything, "--json", cwd=ws).stdout)
    assert len(extracted["candidates"]) == 1 and len(store.all_records(store.sidecar(ws))) == 1


def test_all_refuses_a_project_beside_it_and_a_projects_root_without_it(ws: Path, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    for argv in (["--projects-root", str(projects)], ["--all", "--project", str(projects)],
                 ["--all", "--projects-root", str(tmp_path / "missing")]):
        bad = distill("stats", *argv, "--json", cwd=ws)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1, argv
        assert json.loads(bad.stdout)["exitCode"] == 2
