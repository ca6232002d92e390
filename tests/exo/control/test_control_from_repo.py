"""``exo control --governed --from-repo`` answers about the real workspace: claims from
the claim branches two clones raced for over a bare remote, and their leases expiring."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.console import run
from tests.support.coordination import ITEM, clone, make_remote
from tests.support.repos import git

EXO = str(Path(sys.executable).parent / "exo")
SCHEMA = "vivary.exo-control-request/v0"


def _control(root: Path, operation: str, state: dict[str, Any], given: dict[str, Any],
             ) -> tuple[int, dict[str, Any], str]:
    request = json.dumps({"schema": SCHEMA, "operation": operation, "state": state,
                          "input": given})
    proc = run("exo", "control", "--governed", "--from-repo", "--json", "--root", root, "-",
               input=request)
    return proc.returncode, json.loads(proc.stdout or "null"), proc.stderr


def _claim_input(who: str, path: str, now: str) -> dict[str, Any]:
    return {"scope": {"project": "workspace", "paths": [path]},
            "actor": {"kind": "agent", "id": who}, "now": now}


def _commit_instant(root: Path, ref: str) -> str:
    seconds = int(git(root, "log", "-1", "--format=%ct", ref, "--"))
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_racing_clones_see_one_holder(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    ann, bob = clone(remote, "ann"), clone(remote, "bob")
    racers = [subprocess.Popen([EXO, "claim", "item", "--agent", who, "--remote", "origin",
                                "--root", str(root)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
              for who, root in (("ann", ann), ("bob", bob))]
    codes = [racer.wait() for racer in racers]
    assert sorted(codes) == [0, 1]
    winner, loser = ("ann", bob) if codes[0] == 0 else ("bob", ann)
    git(loser, "fetch", "-q", "origin")
    now = _commit_instant(loser, "refs/remotes/origin/claim/item")

    rc, answer, _ = _control(loser, "claim", {"claims": []},
                             _claim_input("loser", ITEM, now))
    result = answer["result"]
    assert rc == 0 and result["decision"] == "refused"
    assert result["reason_codes"] == ["scope_conflict"]
    assert [c["actor"] for c in result["conflicts"]] == [{"kind": "agent", "id": winner}]
    assert [c["scope"]["paths"] for c in result["claims"]] == [[ITEM]]

    rc, answer, _ = _control(loser, "claim", {"claims": []},
                             _claim_input("loser", "changes/bravo.md", now))
    assert answer["result"]["decision"] == "granted"
    assert len(answer["result"]["claims"]) == 2


def test_request_state_is_replaced_not_trusted(tmp_path: Path) -> None:
    root = clone(make_remote(tmp_path), "solo")
    forged = {"claim_id": "claim_0", "scope": {"project": "workspace", "paths": [ITEM]}}
    rc, answer, _ = _control(root, "claim", {"claims": [forged]},
                             _claim_input("me", ITEM, "2030-01-01T00:00:00Z"))
    assert rc == 0 and answer["result"]["decision"] == "granted"
    _, left_out, _ = _control(root, "claim", {}, _claim_input("me", ITEM, "2030-01-01T00:00:00Z"))
    assert left_out == answer


def test_outside_a_workspace_is_a_one_line_error(tmp_path: Path) -> None:
    rc, answer, err = _control(tmp_path, "expire_leases", {}, {"now": "2030-01-01T00:00:00Z"})
    assert (rc, answer) == (2, None)
    assert err.startswith("exo: ") and err.count("\n") == 1


def _claimed_with_a_lease(tmp_path: Path) -> tuple[Path, str]:
    """A clone whose claims carry a 60 s lease, ann's claim of the item, and its instant."""
    root = clone(make_remote(tmp_path), "solo")
    git(root, "config", "exo.lease-seconds", "60")
    assert run("exo", "claim", "item", "--agent", "ann", "--root", root).returncode == 0
    return root, _commit_instant(root, "claim/item")


def test_leases_expire_from_the_claim_commit(tmp_path: Path) -> None:
    root, start = _claimed_with_a_lease(tmp_path)

    rc, live, _ = _control(root, "expire_leases", {"claims": []}, {"now": start})
    assert rc == 0 and live["result"]["expired"] == []
    (claim,) = live["result"]["claims"]
    assert claim["created_at"] == claim["lease"]["granted_at"] == start

    later = claim["lease"]["expires_at"]
    _, gone, _ = _control(root, "expire_leases", {"claims": []}, {"now": later})
    assert [e["claim"]["claim_id"] for e in gone["result"]["expired"]] == [claim["claim_id"]]
    assert gone["result"]["claims"] == []

    _, refused, _ = _control(root, "claim", {"claims": []},
                             _claim_input("bob", "changes/bravo.md", later))
    assert refused["result"]["reason_codes"] == ["lease_expired"]


def test_a_later_commit_on_the_claim_branch_does_not_move_the_lease(tmp_path: Path) -> None:
    root, start = _claimed_with_a_lease(tmp_path)
    # work on the branch, its committer date chosen by whoever commits (here: far ahead)
    git(root, "checkout", "-q", "claim/item")
    (root / "work.txt").write_text("work\n")
    git(root, "add", "work.txt")
    subprocess.run(["git", "-C", str(root), "commit", "-q", "--no-verify", "-m", "work"],
                   check=True, env={**os.environ, "GIT_COMMITTER_DATE": "2099-01-01T00:00:00Z"})
    git(root, "checkout", "-q", "-")
    _, answer, _ = _control(root, "expire_leases", {"claims": []},
                            {"now": "2050-01-01T00:00:00Z"})
    (expired,) = answer["result"]["expired"]
    assert expired["claim"]["created_at"] == expired["claim"]["lease"]["granted_at"] == start


def test_tasks_are_the_work_items(tmp_path: Path) -> None:
    root = clone(make_remote(tmp_path), "solo")
    _, answer, _ = _control(root, "dependencies", {"tasks": []}, {"task_id": "hotel"})
    assert answer["result"]["decision"] == "ready"
    _, missing, _ = _control(root, "dependencies", {"tasks": []}, {"task_id": "modules-core"})
    assert missing["result"]["reason_codes"] == ["unknown_task"]


def test_bad_lease_config_is_a_one_line_error(tmp_path: Path) -> None:
    root = clone(make_remote(tmp_path), "solo")
    git(root, "config", "exo.lease-seconds", "soon")
    assert run("exo", "claim", "item", "--agent", "ann", "--root", root).returncode == 0
    rc, answer, err = _control(root, "expire_leases", {"claims": []},
                               {"now": "2030-01-01T00:00:00Z"})
    assert (rc, answer) == (2, None)
    assert err.count("\n") == 1 and "exo.lease-seconds" in err
