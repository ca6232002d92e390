"""Issue 27: the guard for a team. Real clones of one bare remote, real ssh-keygen keys,
CI by the documented recipe in a fresh clone; each of the three results the issue
reports has a test here that fails on 7f21ccb."""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from hooks import install as installer
from strato.guard import engine, pin, signedops, store
from tests.support.guard import (
    POLICY,
    Key,
    Workspace,
    ci,
    forge,
    ledger,
    origin_with_main,
    pull_request,
    run,
    ssh_sign,
)
from tests.support.repos import git


def _clone(remote: Path, where: Path) -> Workspace:
    git(where.parent, "clone", "-q", str(remote), str(where))
    return Workspace(where, where.parent)


def _push(ws: Workspace, branch: str) -> None:
    git(ws.root, "push", "-q", "origin", branch, f"{store.REF}:{store.REF}")


def test_another_branchs_notes_push_does_not_make_an_open_branch_re_pin(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """Result (a): B fetches the shared notes, appends and pushes them; A pinned before
    and never touches its branch again. A's review still passes with A's entries only."""
    remote = origin_with_main(ws, key, tmp_path)
    pull_request(ws, key, "pr-a", "release:a")
    _push(ws, "pr-a")
    other = _clone(remote, tmp_path / "b")
    git(other.root, "fetch", "-q", "origin", f"+{store.REF}:{store.REF}")
    pull_request(other, key, "pr-b", "release:b")
    _push(other, "pr-b")
    review = ci(remote, "pr-a", tmp_path / "ci-a")
    assert review.returncode == 0, review.stdout + review.stderr
    assert "3 ledger entries added" in review.stdout
    assert "release:a" in review.stdout and "release:b" not in review.stdout


def test_following_the_unpinned_advice_never_lets_an_unreviewed_override_pass(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """Result (b): the base pins nothing; review says to run `strato guard pin` on the base
    branch. Done in the clone that made the override, the override must still be shown."""
    remote = origin_with_main(ws, key, tmp_path)
    git(ws.root, "rm", "-q", pin.PIN_PATH)
    git(ws.root, "commit", "-q", "-m", "main: no pin")
    git(ws.root, "push", "-q", "origin", "main")
    pull_request(ws, key, "pr", "release:1")
    _push(ws, "pr")
    first = ci(remote, "pr", tmp_path / "ci-1")
    assert first.returncode == 1 and "run `strato guard pin` on the base branch" in first.stdout
    git(ws.root, "checkout", "-q", "main")
    advised = run(ws, "pin")
    assert advised.returncode == 0, advised.stderr
    assert (ws.root / pin.PIN_PATH).read_text() == "none\n"  # the remote's base pins nothing
    git(ws.root, "add", pin.PIN_PATH)
    git(ws.root, "commit", "-q", "-m", "main: pin as advised")
    git(ws.root, "push", "-q", "origin", "main")
    second = ci(remote, "pr", tmp_path / "ci-2")
    assert "0 ledger entries added" not in second.stdout
    assert "3 ledger entries added" in second.stdout and "authorized by alice@example.com" in second.stdout


def test_pin_refuses_notes_that_fail_verify_and_writes_nothing(ws: Workspace, key: Key, tmp_path: Path) -> None:
    origin_with_main(ws, key, tmp_path)
    pull_request(ws, key, "pr", "release:1")
    before = (ws.root / pin.PIN_PATH).read_bytes()
    entries = ledger(ws, "release:1")
    entries[-1]["rationale"] = "forged after signing"
    forge(ws, entries, "release:1")
    proc = run(ws, "pin", "--from", "local", "--json")
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.count("\n") == 1 and "pin_refused" in proc.stderr
    assert json.loads(proc.stdout)["error_type"] == "pin_refused"
    assert (ws.root / pin.PIN_PATH).read_bytes() == before


def test_two_prs_that_each_changed_the_pin_merge_through_the_driver(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """Result (c): two PRs from two clones, notes forked from the same base pin, synced to
    the remote; the second merge into main no longer conflicts on the pin, and main's
    review of the result judges exactly the second PR's entries."""
    remote = origin_with_main(ws, key, tmp_path)
    pull_request(ws, key, "pr-a", "release:a")
    git(ws.root, "push", "-q", "origin", "pr-a")
    assert run(ws, "sync").returncode == 0
    other = _clone(remote, tmp_path / "b")
    pull_request(other, key, "pr-b", "release:b")  # its notes fork from main's pin, not from A's
    git(other.root, "push", "-q", "origin", "pr-b")
    synced = run(other, "sync", "--json")
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout)["pushed"] is not None
    installer.install(ws.root, ("pre-commit",))
    git(ws.root, "fetch", "-q", "origin")
    assert run(ws, "sync").returncode == 0  # brings B's notes objects (the remote has their union)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge a", "origin/pr-a")
    # the driver is this interpreter, isolated: a `strato` the work tree holds, on a
    # relative PATH entry, never runs in its place
    driver = git(ws.root, "config", f"merge.{installer.PIN_DRIVER}.driver").strip()
    assert driver == f"{shlex.quote(sys.executable)} -I -m strato.cli guard merge-pins %O %A %B"
    planted = ws.root / "strato"
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path / 'planted-ran'}\nexit 0\n")
    planted.chmod(0o755)
    merged = subprocess.run(["git", "merge", "--no-ff", "-m", "merge b", "origin/pr-b"], cwd=ws.root,
                            capture_output=True, text=True, check=False,
                            env={**os.environ, "PATH": f".:{os.environ['PATH']}"})
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert not (tmp_path / "planted-ran").exists()
    planted.unlink()
    union = (ws.root / pin.PIN_PATH).read_text().strip()
    held = {kept.anchor for kept in store.ledgers(ws.repo, union)}
    assert len(held) == 2  # both PRs' ledgers, none lost
    report = run(ws, "review", "--base", "HEAD^1", "--head", "HEAD", "--json")
    assert report.returncode == 0, report.stdout
    assert {row["resource_id"] for row in json.loads(report.stdout)["entries"]} == {"release:b"}


def test_the_merge_driver_refuses_files_that_are_not_pins(ws: Workspace, tmp_path: Path) -> None:
    files = []
    for name, text in (("base", "none\n"), ("ours", "#!/bin/sh\nrm -rf /\n"), ("theirs", "none\n")):
        files.append(tmp_path / name)
        files[-1].write_text(text)
    proc = run(ws, "merge-pins", *map(str, files), "--json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "is not a guard pin" in proc.stderr
    assert files[1].read_text() == "#!/bin/sh\nrm -rf /\n"


def test_two_pins_whose_notes_both_appended_to_one_ledger_name_the_reappend_command(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    remote = origin_with_main(ws, key, tmp_path)
    pull_request(ws, key, "pr-a", "release:1")
    ours = (ws.root / pin.PIN_PATH).read_text().strip()
    other = _clone(remote, tmp_path / "b")
    pull_request(other, key, "pr-b", "release:1")
    theirs = (other.root / pin.PIN_PATH).read_text().strip()
    git(ws.root, "fetch", "-q", str(other.root), f"+{store.REF}:refs/notes/theirs")
    tip = git(ws.root, "rev-parse", store.REF).strip()
    sides = [tmp_path / "o", tmp_path / "a", tmp_path / "t"]
    for path, text in zip(sides, ("none\n", f"{ours}\n", f"{theirs}\n"), strict=True):
        path.write_text(text)
    proc = run(ws, "merge-pins", *map(str, sides))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert f"strato guard reappend release:1 --onto {theirs}" in proc.stderr
    assert sides[1].read_text() == f"{ours}\n"
    assert git(ws.root, "rev-parse", store.REF).strip() == tip


def test_a_same_ledger_conflict_is_one_line_and_one_command_re_derives_it(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """A and B both append to release:1 from the same line. A lands first; B's sync is
    refused in one line naming `reappend`, which re-derives B's transition and stops at
    its override (the signature covers the head it was made at). Signed again, B's
    review shows exactly B's entries."""
    remote = origin_with_main(ws, key, tmp_path)
    ws.commit({"NOTES.md": "n\n"}, "main: notes")
    engine.register(ws.repo, {"resource_id": "release:1", **copy.deepcopy(POLICY)})
    engine.transition(ws.repo, {"resource_id": "release:1", "from_state": "draft", "to_state": "review"})
    ws.pin("main: release:1 under review")
    _push(ws, "main")
    git(ws.root, "checkout", "-q", "-b", "pr-a")
    refused = {"resource_id": "release:1", "from_state": "review", "to_state": "released"}
    assert engine.transition(ws.repo, refused)["status"] == "refused"
    ws.pin("pr-a: a refused release")
    _push(ws, "pr-a")
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--ff-only", "pr-a")
    git(ws.root, "push", "-q", "origin", "main")

    other = _clone(remote, tmp_path / "b")
    git(other.root, "fetch", "-q", "origin", f"+{store.REF}:refs/notes/fetched")
    git(other.root, "reset", "-q", "--hard", "origin/main~1")  # B started before A landed
    git(other.root, "update-ref", store.REF, (other.root / pin.PIN_PATH).read_text().strip())
    git(other.root, "checkout", "-q", "-b", "pr-b")
    assert engine.transition(other.repo, refused)["status"] == "refused"
    signedops.override(other.repo, _signed(other, key))
    other.pin("pr-b: an override")
    mine = git(other.root, "rev-parse", store.REF).strip()
    theirs = git(remote, "rev-parse", store.REF).strip()

    conflict = run(other, "sync")
    assert conflict.returncode == 1 and conflict.stderr.count("\n") == 1
    assert f"strato guard reappend release:1 --onto {theirs}" in conflict.stderr
    assert git(remote, "rev-parse", store.REF).strip() == theirs  # nothing pushed
    assert git(other.root, "rev-parse", store.REF).strip() == mine  # no ref moved

    again = run(other, "reappend", "release:1", "--onto", theirs, "--json")
    done = json.loads(again.stdout)
    assert again.returncode == 0 and done["status"] == "stopped" and done["reappended"] == 1
    assert "sign it again" in done["reason"] and done["previous_tip"] == mine
    assert done["pinned"] == git(other.root, "rev-parse", store.REF).strip()
    assert run(other, "override", stdin=_signed(other, key)).returncode == 0  # signed again
    assert run(other, "sync").returncode == 0
    git(other.root, "commit", "-q", "-am", "pr-b: re-derived after pr-a")
    installer.install(other.root, ("pre-commit",))
    git(other.root, "merge", "-q", "-m", "merge main", "origin/main")
    git(other.root, "push", "-q", "origin", "pr-b")
    review = ci(remote, "pr-b", tmp_path / "ci-b")
    assert review.returncode == 0, review.stdout + review.stderr
    assert "2 ledger entries added" in review.stdout and "authorized by alice@example.com" in review.stdout


def _signed(ws: Workspace, key: Key) -> dict[str, object]:
    ask = {"resource_id": "release:1", "from_state": "review", "to_state": "released", "rationale": "go"}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    return {**ask, "authorization": ssh_sign(key, ns, payload.encode(), ws.tmp)}


def test_two_clones_push_with_the_hooks_and_each_review_shows_its_own_entries(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """Nobody fetches anyone's notes or re-pins: the pre-push hook merges the guard notes
    with the remote's (different ledgers), and each pull request's review judges its own."""
    remote = origin_with_main(ws, key, tmp_path)
    other = _clone(remote, tmp_path / "b")
    pull_request(ws, key, "pr-a", "release:a")
    pull_request(other, key, "pr-b", "release:b")
    for clone in (ws, other):
        installer.install(clone.root, ("pre-push",))
    for clone, branch in ((ws, "pr-a"), (other, "pr-b")):
        pushed = subprocess.run(["git", "push", "origin", branch], cwd=clone.root, capture_output=True,
                                text=True, check=False)
        assert pushed.returncode == 0 and "not pushed" not in pushed.stderr, pushed.stderr
    for branch, own, foreign in (("pr-a", "release:a", "release:b"), ("pr-b", "release:b", "release:a")):
        review = ci(remote, branch, tmp_path / f"ci-{branch}")
        assert review.returncode == 0, review.stdout + review.stderr
        assert "3 ledger entries added" in review.stdout
        assert own in review.stdout and foreign not in review.stdout


def test_a_pr_stays_reviewable_when_another_lands_first(ws: Workspace, key: Key, tmp_path: Path) -> None:
    """A lands on main (its pin now main's); B, opened before, is not updated: its review
    judges the union main's pin and B's would merge to, and shows B's entries only."""
    remote = origin_with_main(ws, key, tmp_path)
    other = _clone(remote, tmp_path / "b")
    pull_request(ws, key, "pr-a", "release:a")
    pull_request(other, key, "pr-b", "release:b")
    for clone, branch in ((ws, "pr-a"), (other, "pr-b")):
        installer.install(clone.root, ("pre-push",))
        git(clone.root, "push", "-q", "origin", branch)
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--ff-only", "pr-a")
    git(ws.root, "push", "-q", "origin", "main")
    review = ci(remote, "pr-b", tmp_path / "ci-b")
    assert review.returncode == 0, review.stdout + review.stderr
    assert "3 ledger entries added" in review.stdout
    assert "release:b" in review.stdout and "release:a" not in review.stdout


def test_a_merge_without_the_driver_names_the_one_command_that_resolves_the_pin(
    ws: Workspace, key: Key, tmp_path: Path
) -> None:
    """A merge made where no driver is registered (a server, a clone without the hooks)
    leaves conflict markers in the pin: the hook and review name `merge-pins --resolve`,
    which writes the pin of the union; committed, the merge's review passes."""
    remote = origin_with_main(ws, key, tmp_path)
    other = _clone(remote, tmp_path / "b")
    pull_request(ws, key, "pr-a", "release:a")
    pull_request(other, key, "pr-b", "release:b")
    for clone, branch in ((ws, "pr-a"), (other, "pr-b")):
        installer.install(clone.root, ("pre-push",))
        git(clone.root, "push", "-q", "origin", branch)
    plain = _clone(remote, tmp_path / "plain")  # no hooks, no driver
    git(plain.root, "fetch", "-q", "origin", "+refs/notes/vivary/*:refs/notes/vivary/*")
    git(plain.root, "merge", "-q", "--no-ff", "-m", "merge a", "origin/pr-a")
    stuck = subprocess.run(["git", "merge", "--no-ff", "-m", "merge b", "origin/pr-b"], cwd=plain.root,
                           capture_output=True, text=True, check=False)
    assert stuck.returncode == 1 and "CONFLICT" in stuck.stdout
    check = run(plain, "pin", "--check", "--json")
    assert check.returncode == 1 and "strato guard merge-pins --resolve" in check.stderr
    resolved = run(plain, "merge-pins", "--resolve", "--json")
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    merged = json.loads(resolved.stdout)["notes_tip"]
    assert len({kept.anchor for kept in store.ledgers(plain.repo, merged)}) == 2
    git(plain.root, "add", pin.PIN_PATH)
    git(plain.root, "commit", "-q", "--no-edit")
    report = run(plain, "review", "--base", "HEAD^1", "--head", "HEAD", "--json")
    assert report.returncode == 0, report.stdout
    assert {row["resource_id"] for row in json.loads(report.stdout)["entries"]} == {"release:b"}


def test_pin_from_origin_writes_what_the_remotes_base_pins(ws: Workspace, key: Key, tmp_path: Path) -> None:
    """By default `strato guard pin` copies the pin of the remote's copy of the base, so a
    base never takes in entries of this clone that no review saw."""
    origin_with_main(ws, key, tmp_path)
    pull_request(ws, key, "pr-a", "release:a")
    reviewed = (ws.root / pin.PIN_PATH).read_text()
    git(ws.root, "push", "-q", "origin", "pr-a:main", f"{store.REF}:{store.REF}")  # landed
    git(ws.root, "fetch", "-q", "origin")
    pull_request(ws, key, "pr-c", "release:c")  # more local entries, not reviewed
    proc = run(ws, "pin", "--base", "main", "--json")
    assert proc.returncode == 0, proc.stderr
    assert (ws.root / pin.PIN_PATH).read_text() == reviewed
    assert json.loads(proc.stdout)["notes_tip"] == reviewed.strip()
    git(ws.root, "checkout", "-q", "--detach")
    detached = run(ws, "pin", "--json")
    assert detached.returncode == 2 and detached.stderr.count("\n") == 1 and "--base" in detached.stderr
    assert (ws.root / pin.PIN_PATH).read_text() == reviewed


def test_the_merge_driver_wants_three_files_or_resolve(ws: Workspace) -> None:
    proc = run(ws, "merge-pins", "--json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert json.loads(proc.stdout)["error_type"] == "invalid_usage"
