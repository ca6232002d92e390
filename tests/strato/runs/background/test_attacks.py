"""Another agent in the repository plants files under `.git/vivary/bg/<run>/` before a
background runner and its dispatch process write there: a symlink (or a second hard
link) to a victim file outside the workspace must be replaced, never written through."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from strato.runs.background import runner as background
from strato.runs.service import Runs
from tests.support.runs import calls, kill_hostiles, make_workspace, strato, wait_for


@pytest.fixture
def workspace(repo_dir: Path) -> Iterator[Path]:
    yield make_workspace(repo_dir)
    kill_hostiles(repo_dir)


def test_symlinks_and_hard_links_planted_under_bg_are_never_written_through(
    workspace: Path, tmp_path: Path
) -> None:
    code, planned, err = strato(workspace, "flow", "plan", str(workspace / "specs/steps.yaml"), "--input", "tag=sym")
    assert code == 0, err
    run_id = planned["runId"]
    runs = Runs(workspace)
    token = runs.engine(runs.load(run_id), judge=False).ready()[0]["dispatchToken"]
    folder = background.bg_dir(runs, run_id)
    dispatch = folder / "dispatch" / token
    dispatch.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = {}
    for name in ("runner.pid", "runner.log", "dispatch.log", "finished.json", "request.json", "agent.pgid"):
        victim = outside / name
        victim.write_text("precious\n")
        victims[name] = victim
        where = (dispatch if name in ("dispatch.log", "finished.json", "request.json", "agent.pgid") else folder)
        (where / name).symlink_to(victim)
    (folder / "runner.lock").symlink_to(outside / "created-by-lock")  # dangling: O_CREAT would make it
    hard = outside / "hard-linked"
    hard.write_text("precious\n")
    os.link(hard, dispatch / "lock")

    code, _, err = strato(workspace, "flow", "resume", run_id)
    assert code == 0, err

    def ended() -> bool:
        return strato(workspace, "flow", "poll", run_id)[1]["bg"]["status"] == "completed"

    wait_for(ended, "the run completes")
    assert calls(workspace, "sym") == ["draft", "fix", "fix", "finish"]
    for name, victim in victims.items():
        assert victim.read_text() == "precious\n", f"{name} was written through its symlink"
    assert hard.read_text() == "precious\n"
    assert not (outside / "created-by-lock").exists()
    assert int((folder / "runner.pid").read_text()) > 0 and not (folder / "runner.pid").is_symlink()


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("planted", ["bg", "bg/linked"])
def test_a_folder_under_vivary_planted_as_a_symlink_is_refused_and_nothing_is_written_outside(
    workspace: Path, tmp_path: Path, planted: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("precious\n")
    link = workspace / ".git" / "vivary" / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    spec = str(workspace / "specs/steps.yaml")
    code, doc, err = strato(workspace, "run", spec, "--input", "tag=link", "--background", "--id", "linked")
    assert code == 1 and doc["error"]["code"] == "planted_link", err
    assert len(err.strip().splitlines()) == 1 and "is a symlink" in err and "Traceback" not in err
    code, doc, err = strato(workspace, "flow", "poll", "linked")  # a poll would start a runner: refused too
    assert code == 1 and doc["error"]["code"] == "planted_link", err
    assert _tree(outside) == ["precious.txt"] and calls(workspace, "link") == []
