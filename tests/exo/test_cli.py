"""The exo command end to end (its click command run in this process) on real repositories."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.console import run
from tests.support.coordination import ITEM, clone, make_remote, write_workspace
from tests.support.repos import commit_all, git, write_files


def exo(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = run("exo", *args, cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _refs(root: Path) -> str:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/heads/claim")


@pytest.fixture
def ws(repo_dir: Path) -> Path:
    write_workspace(repo_dir)
    commit_all(repo_dir)
    return repo_dir


def test_claim_then_board_shows_the_holder(ws: Path) -> None:
    claimed = exo(ws, "claim", "item", "--agent", "@connie", "--json")
    assert claimed.returncode == 0, claimed.stderr
    doc = json.loads(claimed.stdout)
    assert doc["claimed"] and doc["branch"] == "claim/item" and doc["assignee"] == "connie"
    assert doc["path"] == ITEM and doc["previous_assignee"] is None
    board = json.loads(exo(ws, "board", "--json").stdout)
    assert {"id": "item", "status": "active", "assignee": "connie"} in board["items"]
    assert "  [active]  item  @connie" in exo(ws, "board").stdout.splitlines()
    again = exo(ws, "claim", "item", "--agent", "dave")
    assert again.returncode == 1
    assert again.stderr.strip() == "exo: item is already claimed by @connie (claim/item)"
    assert git(ws, "status", "--porcelain") == ""
    # The item's own file in the checkout still has no assignee: only the branch does.
    assert "assignee" not in (ws / ITEM).read_text()


def test_refusals_change_nothing(ws: Path, tmp_path: Path) -> None:
    cases = [
        (["claim", "nope", "--agent", "a"], 1, "no work item with id 'nope'"),
        (["claim", "core", "--agent", "a"], 1, "'core' is not a work item under changes/"),
        (["claim", "item", "--agent", "a/b"], 2, "invalid agent handle"),
        (["claim", "item"], 2, "Missing option '--agent'"),
        (["claim", "item", "--agent", "a", "--root", str(tmp_path / "none")], 2, "exo:"),
        (["release", "item", "--agent", "a"], 1, "item is not claimed"),
        (["release", "item"], 2, "Missing option '--agent'"),
        (["release", "item", "--agent", "a", "--force"], 2, "--force needs --reason"),
    ]
    for args, code, message in cases:
        proc = exo(ws, *args)
        assert (proc.returncode, message in proc.stderr) == (code, True), (args, proc.stderr)
    assert _refs(ws) == "" and git(ws, "status", "--porcelain") == ""


def test_workspace_without_the_coordination_pack_names_the_line(repo_dir: Path) -> None:
    write_workspace(repo_dir, coordination=False)
    commit_all(repo_dir)
    proc = exo(repo_dir, "claim", "item", "--agent", "a")
    assert proc.returncode == 2
    assert 'add packs = ["coordination"] to tropo.toml' in proc.stderr
    assert _refs(repo_dir) == ""


def test_repository_states(repo_dir: Path, tmp_path: Path) -> None:
    write_workspace(repo_dir)
    no_commits = exo(repo_dir, "claim", "item", "--agent", "a")
    assert no_commits.returncode == 2 and "no commits" in no_commits.stderr
    commit_all(repo_dir)
    git(repo_dir, "checkout", "-q", "--detach")
    detached = exo(repo_dir, "claim", "item", "--agent", "a")
    assert detached.returncode == 2 and "detached" in detached.stderr
    plain = tmp_path / "plain"
    write_workspace(plain)
    outside = exo(plain, "claim", "item", "--agent", "a")
    assert outside.returncode == 2 and "not a git repository" in outside.stderr
    assert _refs(repo_dir) == ""


def test_symlinked_item_is_refused(ws: Path) -> None:
    os.symlink("item.md", ws / "changes/alias.md")
    commit_all(ws)
    proc = exo(ws, "claim", "alias", "--agent", "a")
    assert proc.returncode == 1 and "symlink" in proc.stderr
    assert _refs(ws) == ""


def test_claim_is_made_from_head_not_the_working_tree(ws: Path) -> None:
    (ws / ITEM).write_text("---\nstatus: done\n---\n# uncommitted\n")
    proc = exo(ws, "claim", "item", "--agent", "a")
    assert proc.returncode == 0, proc.stderr
    shown = git(ws, "show", f"claim/item:{ITEM}")
    assert "status: active" in shown and "assignee: a" in shown
    assert (ws / ITEM).read_text() == "---\nstatus: done\n---\n# uncommitted\n"


def test_workspace_in_a_subdirectory(repo_dir: Path) -> None:
    write_workspace(repo_dir / "team")
    write_files(repo_dir, {"other.txt": "x\n"})
    commit_all(repo_dir)
    proc = exo(repo_dir, "claim", "item", "--agent", "a", "--root", "team", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "assignee: a" in git(repo_dir, "show", f"claim/item:team/{ITEM}")
    board = json.loads(exo(repo_dir / "team", "board", "--json").stdout)
    assert {"id": "item", "status": "active", "assignee": "a"} in board["items"]


def test_worktree_and_release(ws: Path, tmp_path: Path) -> None:
    where = tmp_path / "wt-item"
    proc = exo(ws, "claim", "item", "--agent", "a", "--worktree", str(where), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["worktree"] == str(where.resolve())
    write_files(where, {"changes/item-notes.md": "# notes\n"})
    commit_all(where, "work on item")
    busy = exo(ws, "release", "item", "--agent", "a")
    assert busy.returncode == 1 and "checked out in" in busy.stderr
    git(ws, "worktree", "remove", str(where))
    unmerged = exo(ws, "release", "item", "--agent", "a")
    assert unmerged.returncode == 1 and "1 unmerged commit(s)" in unmerged.stderr
    forced = exo(ws, "release", "item", "--agent", "a", "--force", "--reason", "done elsewhere", "--json")
    assert forced.returncode == 0 and json.loads(forced.stdout)["forced"] is True
    assert _refs(ws) == ""


def test_remote_claims_and_board_from_another_clone(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    one, two = clone(bare, "one"), clone(bare, "two")
    git(two, "config", "exo.remote", "origin")  # the configured default remote
    won = exo(two, "claim", "item", "--agent", "bea")
    assert won.returncode == 0 and "pushed to origin" in won.stdout, won.stderr
    lost = exo(one, "claim", "item", "--agent", "al", "--remote", "origin")
    assert lost.returncode == 1 and "@bea" in lost.stderr
    assert _refs(one) == ""
    assert "  [active]  item  @bea" in exo(one, "board").stdout.splitlines()
    git(one, "remote", "add", "gone", str(tmp_path / "missing.git"))
    down = exo(one, "claim", "bravo", "--agent", "al", "--remote", "gone")
    assert down.returncode == 1 and "nothing claimed" in down.stderr
    assert _refs(one) == ""
    assert exo(two, "release", "item", "--agent", "bea").returncode == 0
    assert git(bare, "for-each-ref", "refs/heads/claim") == ""


def test_conflicts_strict_and_default_command(ws: Path) -> None:
    plain = exo(ws)
    assert plain.returncode == 0 and plain.stdout.startswith("exo: 5 conflict(s)")
    assert exo(ws, "conflicts", "--strict").returncode == 1


def test_help_has_examples() -> None:
    for args in ([], ["board"], ["conflicts"], ["roles"], ["claim"], ["release"]):
        proc = run("exo", *args, "--help")
        assert proc.returncode == 0, args
        assert "Example" in proc.stdout, args


def test_the_pack_hint_names_the_thin_config_of_a_thin_workspace(
    tmp_path: Path, upstream: Callable[[str], Path]
) -> None:
    root = tmp_path / "thin"
    subprocess.run([str(upstream("create-vivary")), "init", str(root), "--auto", "--yes"],
                   check=True, capture_output=True)
    write_files(root, {"changes/item.md": "---\nproject: p\nstatus: planned\nslice: s\n---\n# Item\n"})
    if not (root / ".git").exists():
        git(root, "init", "-q")
    commit_all(root)
    proc = exo(root, "claim", "item", "--agent", "a")
    assert proc.returncode == 2
    assert 'add packs = ["coordination"] to .vivary/workspace.toml' in proc.stderr


def test_board_and_conflicts_show_an_authors_escape_sequences_as_text(ws: Path) -> None:
    """Issue 25: an assignee and a module name are what a change's author wrote."""
    modules = 'modules: ["core\\e[2K"]\n---\n'
    write_files(ws, {"changes/hotel.md": f'---\nstatus: active\nassignee: "m\\e]52;c;cm0=\\a\\u034f"\n{modules}# H\n',
                     "changes/india.md": f"---\nstatus: active\n{modules}# India\n"})
    commit_all(ws)
    for args in (["board"], ["conflicts"]):
        out = exo(ws, *args).stdout
        assert "hotel" in out and "U+001B" in out, out
        assert not [c for c in "\x1b\x07\u034f" if c in out], out


def test_a_claim_without_a_remote_says_it_is_local_when_the_clone_has_one(tmp_path: Path) -> None:
    """Two clones can both "win" a local claim: the claim says so, and how to share it."""
    remote = make_remote(tmp_path)
    one, two = clone(remote, "one"), clone(remote, "two")
    share = "share it with --remote origin or `git config exo.remote origin`"
    first = exo(one, "claim", "item", "--agent", "@ann")
    assert first.returncode == 0 and first.stderr == f"exo: this claim is local to this clone " \
        f"(another clone can claim the same item); {share}\n"
    second = exo(two, "claim", "item", "--agent", "@bob", "--json")
    assert second.returncode == 0 and share in json.loads(second.stdout)["note"]
    git(two, "config", "exo.remote", "origin")
    exo(two, "release", "item", "--agent", "@bob")
    shared = exo(two, "claim", "item", "--agent", "@bob", "--json")
    assert shared.returncode == 0 and shared.stderr == "" and "note" not in json.loads(shared.stdout)


def test_a_claim_in_a_clone_without_remotes_carries_no_note(ws: Path) -> None:
    claimed = exo(ws, "claim", "item", "--agent", "@ann", "--json")
    assert claimed.returncode == 0 and claimed.stderr == "" and "note" not in json.loads(claimed.stdout)


def test_the_board_says_when_the_remote_was_last_fetched_and_fetch_refreshes_it(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    one, two = clone(remote, "one"), clone(remote, "two")
    assert exo(one, "claim", "item", "--agent", "@ann", "--remote", "origin").returncode == 0
    stale = exo(two, "board", "--json")
    (row,) = [r for r in json.loads(stale.stdout)["items"] if r["id"] == "item"]
    (seen,) = json.loads(stale.stdout)["remotes"]
    assert row["assignee"] != "ann" and seen["remote"] == "origin" and seen["fetchedAt"].endswith("Z")
    text = exo(two, "board").stdout.splitlines()[-1]
    assert text.startswith("exo: claims from origin: fetched ") and "`exo board --fetch` refreshes" in text
    fresh = exo(two, "board", "--fetch", "--json")
    assert fresh.returncode == 0, fresh.stderr
    (row,) = [r for r in json.loads(fresh.stdout)["items"] if r["id"] == "item"]
    assert row["assignee"] == "ann" and json.loads(fresh.stdout)["remotes"][0]["fetchedAt"] >= seen["fetchedAt"]
    git(two, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    failed = exo(two, "board", "--fetch")
    assert failed.returncode == 1 and failed.stderr.startswith("exo: cannot fetch from 'origin': ")
    assert failed.stderr.count("\n") == 1
