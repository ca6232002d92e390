"""pre-push against a real bare remote: live claim branches travel along (a released one
is never re-created), checks can refuse."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hooks import install as installer
from hooks import prepush, registry
from strato.runs.lanes import store as lanestore
from strato.runs.lanes.store import LaneStore
from tests.support.lanes import lane_evidence
from tests.support.repos import commit_all, git, write_files
from tropo.git.remote import Push
from tropo.git.repo import require


@pytest.fixture
def pushed(repo_dir: Path) -> tuple[Path, Path]:
    """A repository with one commit and an empty bare remote named origin."""
    bare = repo_dir.parent / "remote.git"
    git(repo_dir.parent, "init", "-q", "--bare", str(bare))
    git(repo_dir, "remote", "add", "origin", str(bare))
    write_files(repo_dir, {"a.txt": "a\n"})
    commit_all(repo_dir)
    return repo_dir, bare


def refuse_everything(push: Push) -> list[str]:
    return [f"{len(push.updates)} ref(s) to {push.remote}"]


def pass_everything(push: Push) -> list[str]:
    return []


def _live_claim(root: Path, name: str) -> str:
    """Publish ``claim/<name>`` at HEAD (as ``exo claim --remote`` does), then commit once
    more and move the local branch there: work the remote's claim branch lacks."""
    git(root, "push", "-q", "--no-verify", "origin", f"HEAD:refs/heads/claim/{name}")
    write_files(root, {f"{name}.txt": "work\n"})
    tip = commit_all(root)
    git(root, "branch", "-f", f"claim/{name}", tip)
    return tip


def test_work_on_live_claim_branches_is_pushed_along(pushed: tuple[Path, Path]) -> None:
    root, bare = pushed
    installer.install(root, ("pre-push",))
    tip = _live_claim(root, "fix-login")
    git(root, "branch", "unrelated")
    git(root, "push", "-q", "origin", "main")
    heads = git(bare, "for-each-ref", "--format=%(refname)", "refs/heads").split()
    assert heads == ["refs/heads/claim/fix-login", "refs/heads/main"]
    assert git(bare, "rev-parse", "claim/fix-login").strip() == tip


def test_a_released_claim_is_not_brought_back(pushed: tuple[Path, Path]) -> None:
    """Released from another clone, a claim stays released when its old holder pushes
    something else; and a claim never published is not published by the hook either."""
    root, bare = pushed
    installer.install(root, ("pre-push",))
    _live_claim(root, "x")
    git(root, "branch", "claim/never-published")
    other = root.parent / "other"
    git(root.parent, "clone", "-q", str(bare), str(other))
    git(other, "push", "-q", "--no-verify", "origin", ":refs/heads/claim/x")  # the release
    write_files(root, {"more.txt": "more\n"})
    commit_all(root)
    proc = subprocess.run(["git", "push", "origin", "main"], cwd=root, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0 and "vivary:" not in proc.stderr
    assert git(bare, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]


def test_no_claims_means_only_what_was_asked(pushed: tuple[Path, Path]) -> None:
    root, bare = pushed
    installer.install(root, ("pre-push",))
    git(root, "branch", "unrelated")
    git(root, "push", "-q", "origin", "main")
    assert git(bare, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]


def test_a_rejected_claim_push_warns_but_lets_the_push_through(pushed: tuple[Path, Path]) -> None:
    root, bare = pushed
    installer.install(root, ("pre-push",))
    other = root.parent / "other"
    git(root.parent, "clone", "-q", str(bare), str(other))
    write_files(other, {"b.txt": "b\n"})
    commit_all(other)
    git(other, "push", "-q", "--no-verify", "origin", "HEAD:refs/heads/claim/x")
    write_files(root, {"c.txt": "c\n"})
    commit_all(root)
    git(root, "branch", "claim/x")
    proc = subprocess.run(["git", "push", "origin", "main"], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith("vivary:")] == [
        "vivary: claim branches not pushed: claim/x has diverged from origin's; fetch it and look"]
    assert git(bare, "rev-parse", "main").strip() == git(root, "rev-parse", "main").strip()
    assert git(bare, "rev-parse", "claim/x").strip() == git(other, "rev-parse", "HEAD").strip()


def test_registered_checks_refuse_the_push_and_nothing_moves(
    pushed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, bare = pushed
    git(root, "branch", "claim/a")
    monkeypatch.setitem(registry.PRE_PUSH, "ok", f"{__name__}:pass_everything")
    monkeypatch.setitem(registry.PRE_PUSH, "guard", f"{__name__}:refuse_everything")
    head = git(root, "rev-parse", "HEAD").strip()
    stdin = f"refs/heads/main {head} refs/heads/main {'0' * 40}\n"
    assert prepush.main(root, ["origin", str(bare)], stdin) == 1
    err = capsys.readouterr().err
    assert "guard: 1 ref(s) to origin" in err and "push refused: 1 problem" in err
    assert git(bare, "for-each-ref").strip() == ""


def test_passing_checks_let_claims_travel(pushed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, bare = pushed
    tip = _live_claim(root, "a")
    monkeypatch.setitem(registry.PRE_PUSH, "ok", f"{__name__}:pass_everything")
    assert prepush.main(root, ["origin", str(bare)], "") == 0
    assert git(bare, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/claim/a"]
    assert git(bare, "rev-parse", "claim/a").strip() == tip


def test_parse_updates_skips_malformed_lines() -> None:
    text = "refs/heads/a 1 refs/heads/a 2\ngarbage\n\nrefs/tags/t 3 refs/tags/t 4\n"
    got = prepush.parse_updates(text)
    assert [u.local_ref for u in got] == ["refs/heads/a", "refs/tags/t"]


def refuse_after_along(push: Push) -> list[str]:
    seen = git(push.root, "ls-remote", "--refs", push.remote, "refs/heads/*").split()[1::2]
    return [f"saw {' '.join(seen)}"]


def test_checks_after_along_see_what_travelled_and_still_refuse(
    pushed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, bare = pushed
    tip = _live_claim(root, "a")
    monkeypatch.setitem(registry.PRE_PUSH_AFTER_ALONG, "late", f"{__name__}:refuse_after_along")
    stdin = f"refs/heads/main {tip} refs/heads/main {'0' * 40}\n"
    assert prepush.main(root, ["origin", str(bare)], stdin) == 1
    err = capsys.readouterr().err
    assert "late: saw refs/heads/claim/a\n" in err and "push refused: 1 problem" in err
    assert git(bare, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/claim/a"]
    assert git(bare, "rev-parse", "claim/a").strip() == tip


def test_verification_lanes_travel_with_a_push_and_merge_when_clones_diverged(pushed: tuple[Path, Path]) -> None:
    root, bare = pushed
    installer.install(root, ("pre-push",))
    LaneStore(require(root)).record([lane_evidence("clean", 1)])
    git(root, "push", "-q", "origin", "main")
    assert git(bare, "rev-parse", lanestore.REF) == git(root, "rev-parse", lanestore.REF)
    other = root.parent / "other"
    git(root.parent, "clone", "-q", str(bare), str(other))
    installer.install(other, ("pre-push",))
    LaneStore(require(other)).record([lane_evidence("clean", 2)])  # never fetched: no common history
    LaneStore(require(root)).record([lane_evidence("failure", 3)])
    write_files(root, {"c.txt": "c\n"})
    commit_all(root)
    git(root, "push", "-q", "origin", "main")  # a fast-forward of the remote's lanes
    write_files(other, {"d.txt": "d\n"})
    commit_all(other)
    proc = subprocess.run(["git", "push", "origin", "HEAD:refs/heads/other"], cwd=other, capture_output=True, text=True)
    assert proc.returncode == 0 and "not pushed" not in proc.stderr, proc.stderr
    tip = git(other, "rev-parse", lanestore.REF)
    assert git(bare, "rev-parse", lanestore.REF) == tip
    assert len(git(other, "rev-list", "--parents", "-n1", lanestore.REF).split()) == 3
    [record] = LaneStore(require(other)).read()[1].values()
    assert record["clean"] == 0 and record["failures"] == 1 and record["verified"] == 3


def test_lanes_that_cannot_be_merged_warn_but_let_the_push_through(pushed: tuple[Path, Path]) -> None:
    root, bare = pushed
    installer.install(root, ("pre-push",))
    LaneStore(require(root)).record([lane_evidence("clean", 1)])
    tree = git(root, "mktree").strip()  # no lanes.json, and a message that is no evidence
    forged = git(root, "commit-tree", tree, "-m", "lanes: trust me\n\nnot evidence").strip()
    git(root, "push", "-q", "--no-verify", "origin", f"{forged}:{lanestore.REF}")
    proc = subprocess.run(["git", "push", "origin", "main"], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0
    assert "vivary: verification lanes not pushed: refusing to merge origin's refs/vivary/lanes" in proc.stderr
    assert git(bare, "rev-parse", "main") == git(root, "rev-parse", "main")
    assert git(bare, "rev-parse", lanestore.REF).strip() == forged
