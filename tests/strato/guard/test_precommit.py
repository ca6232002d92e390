"""The pre-commit hook (installed by our installer, run by real `git commit`) refuses a
staged notes pin the guard notes have moved past, with the one command that fixes it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from hooks import install as installer
from strato.guard import engine, pin, store
from tests.support.guard import POLICY, Workspace, put_ledger, run
from tests.support.repos import git

REGISTER = {"resource_id": "pc:1", **copy.deepcopy(POLICY)}
STRATO = str(Path(sys.executable).parent / "strato")


def commit(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", "change", *args], cwd=ws.root,
                          capture_output=True, text=True, check=False)


def head(ws: Workspace) -> str:
    return git(ws.root, "rev-parse", "HEAD").strip()


def tip(ws: Workspace) -> str:
    return git(ws.root, "rev-parse", store.REF).strip()


def install(ws: Workspace) -> None:
    """Our pre-commit hook, in a workspace the graph check accepts (a tropo.toml)."""
    ws.commit({"tropo.toml": ""}, "a tropo workspace")
    installer.install(ws.root, ("pre-commit",))


@pytest.fixture
def hooked(ws: Workspace) -> Workspace:
    """A workspace pinning its notes, with our pre-commit hook installed."""
    install(ws)
    engine.register(ws.repo, REGISTER)
    ws.pin()
    return ws


def test_a_stale_staged_pin_refuses_the_commit_in_one_line(hooked: Workspace) -> None:
    ws = hooked
    before, pinned = head(ws), tip(ws)
    engine.transition(ws.repo, {"resource_id": "pc:1", "from_state": "draft", "to_state": "review"})
    (ws.root / "a.txt").write_text("a\n")
    git(ws.root, "add", "a.txt")
    proc = commit(ws)
    assert proc.returncode == 1 and head(ws) == before
    assert proc.stderr == (
        f"vivary: commit refused: guard: the staged pin names notes commit {pinned[:12]} but the "
        f"guard notes are at {tip(ws)[:12]}: run `strato guard pin --from local && git add {pin.PIN_PATH}` "
        "(or bypass once with --no-verify)\n"
    )
    fix = subprocess.run(["bash", "-c", pin.FIX], cwd=ws.root, capture_output=True, text=True, check=False,
                         env={"PATH": f"{Path(STRATO).parent}:/usr/bin:/bin"})
    assert fix.returncode == 0, fix.stderr
    assert commit(ws).returncode == 0 and head(ws) != before
    assert git(ws.root, "show", f"HEAD:{pin.PIN_PATH}").strip() == tip(ws)


def test_a_guard_write_through_the_cli_leaves_only_a_git_add(hooked: Workspace) -> None:
    ws = hooked
    ws.commit({"NOTES.md": "n\n"})
    write = run(ws, "transition", stdin='{"resource_id":"pc:1","from_state":"draft","to_state":"review"}')
    assert write.returncode == 0 and "now pins" in write.stderr
    (ws.root / "b.txt").write_text("b\n")
    git(ws.root, "add", "b.txt")
    assert commit(ws).returncode == 1  # the moved pin is in the work tree, not staged
    assert commit(ws, "b.txt").returncode == 1  # a partial commit stages HEAD's pin (GIT_INDEX_FILE)
    assert commit(ws, "-a").returncode == 0  # -a stages the moved pin too
    assert git(ws.root, "show", f"HEAD:{pin.PIN_PATH}").strip() == tip(ws)


def test_a_clone_without_the_pinned_notes_commits_freely(hooked: Workspace) -> None:
    """A contributor who never fetched the notes (or not the latest) made no guard write
    the pin lacks: nothing to fix, so nothing is refused."""
    ws = hooked
    older = tip(ws)
    engine.transition(ws.repo, {"resource_id": "pc:1", "from_state": "draft", "to_state": "review"})
    ws.pin()  # through the hook: current
    git(ws.root, "update-ref", store.REF, older)  # this clone's notes are behind the pin
    ws.commit({"c.txt": "c\n"})
    git(ws.root, "update-ref", "-d", store.REF)  # and now it has none
    ws.commit({"d.txt": "d\n"})
    assert git(ws.root, "log", "--format=%s", "-2").split() == ["change", "change"]


def test_a_project_that_does_not_pin_is_not_asked_to(ws: Workspace) -> None:
    install(ws)
    engine.register(ws.repo, REGISTER)
    ws.commit({"e.txt": "e\n"})
    assert not (ws.root / pin.PIN_PATH).exists()


def test_diverged_notes_and_a_garbage_pin_are_refused(hooked: Workspace) -> None:
    ws = hooked
    pinned = tip(ws)
    engine.transition(ws.repo, {"resource_id": "pc:1", "from_state": "draft", "to_state": "review"})
    ws.pin()  # the pin names the newer notes commit
    newer = tip(ws)
    git(ws.root, "update-ref", store.REF, pinned)
    anchor = git(ws.root, "notes", "--ref=vivary/guard", "list").split()[1]
    put_ledger(ws, anchor, "rewritten\n")  # the notes fork away from what is pinned
    (ws.root / "f.txt").write_text("f\n")
    git(ws.root, "add", "f.txt")
    forked = commit(ws)
    assert forked.returncode == 1 and forked.stderr.count("\n") == 1
    assert f"do not descend from notes commit {newer[:12]} that the staged pin names" in forked.stderr
    (ws.root / pin.PIN_PATH).write_text("\x1b[2J" + "a" * 10_000)
    git(ws.root, "add", pin.PIN_PATH)
    garbage = commit(ws)
    assert garbage.returncode == 1 and "\x1b" not in garbage.stderr and len(garbage.stderr) < 300
    assert "is neither a commit id nor `none`" in garbage.stderr


def test_a_clean_merge_carrying_a_stale_pin_is_refused_then_completed(hooked: Workspace) -> None:
    ws = hooked
    installer.install(ws.root, ("pre-merge-commit",))
    git(ws.root, "checkout", "-q", "-b", "side")
    ws.commit({"side.txt": "s\n"})
    git(ws.root, "checkout", "-q", "main")
    engine.transition(ws.repo, {"resource_id": "pc:1", "from_state": "draft", "to_state": "review"})
    merge = subprocess.run(["git", "merge", "--no-ff", "-q", "-m", "merge side", "side"], cwd=ws.root,
                           capture_output=True, text=True, check=False)
    assert merge.returncode != 0
    assert "vivary: merge refused: guard: the staged pin names notes commit" in merge.stderr
    assert git(ws.root, "rev-parse", "-q", "--verify", "MERGE_HEAD").strip()  # the merge waits
    fix = subprocess.run(["bash", "-c", pin.FIX], cwd=ws.root, capture_output=True, text=True, check=False,
                         env={"PATH": f"{Path(STRATO).parent}:/usr/bin:/bin"})
    assert fix.returncode == 0, fix.stderr
    assert commit(ws).returncode == 0
    assert len(git(ws.root, "log", "-1", "--format=%P").split()) == 2
    assert git(ws.root, "show", f"HEAD:{pin.PIN_PATH}").strip() == tip(ws)
