"""Who chooses a guard command (issue 25, reproduction 4): the notes ref carries policies
from anyone who can push it, so a policy's ``command_exit_zero`` runs only once the
user approved exactly that policy here, and a transition refuses a rewritten notes
history before any predicate runs.

Two clones of one bare remote, real git, ``strato guard`` as a subprocess; every
command writes a marker file, so "nothing ran" is a file that does not exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from strato.guard import engine, signedops, store
from strato.guard.canonical import seal
from tests.support.guard import Workspace, approve_policy, ledger_text, out, put_ledger, run
from tests.support.repos import git
from tropo.git import notes

FETCH_NOTES = "+refs/notes/vivary/guard:refs/notes/vivary/guard"  # as docs/guard.md's recipe
MOVE = {"resource_id": "release:9", "from_state": "draft", "to_state": "review"}


def touching(marker: Path, rid: str = "release:9") -> dict[str, Any]:
    """A register request whose draft->review runs a command that writes ``marker``."""
    statement = f'command_exit_zero(["sh", "-c", "touch {marker}"])'
    return {
        "resource_id": rid,
        "graph": {"draft": ["review"], "review": []},
        "initial": "draft",
        "terminal": ["review"],
        "edge_predicates": {"draft->review": [{"id": "build", "statement": statement}]},
    }


@dataclass
class Clones:
    victim: Workspace
    attacker: Workspace
    marker: Path


@pytest.fixture
def clones(ws: Workspace, tmp_path: Path) -> Clones:
    """The victim's project uses command predicates (allow_commands at HEAD) and shares a
    bare remote with a second contributor, who can push the notes ref."""
    ws.commit({".vivary/guard/config.toml": "allow_commands = true\n"}, "guard: commands on")
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(ws.root, "remote", "add", "origin", str(remote))
    git(ws.root, "push", "-q", "origin", "HEAD:refs/heads/main")
    theirs = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(remote), str(theirs))
    git(theirs, "config", "user.email", "mallory@example.org")
    git(theirs, "config", "user.name", "Mallory")
    return Clones(ws, Workspace(theirs, tmp_path), tmp_path / "pwned")


def fetch_notes(ws: Workspace) -> None:
    git(ws.root, "fetch", "-q", "origin", FETCH_NOTES)


def history(ws: Workspace, rid: str = "release:9") -> list[str]:
    return [e["outcome"] for e in out(run(ws, "history", stdin={"resource_id": rid}))["ledger"]]


def test_a_policy_from_the_notes_ref_runs_nothing_until_the_user_trusts_it(clones: Clones) -> None:
    victim, attacker, marker = clones.victim, clones.attacker, clones.marker
    # the attacker's policy arrives as an ordinary append (a force-push that fast-forwards):
    # every ledger verifies, only its origin is wrong
    engine.register(attacker.repo, touching(marker))
    git(attacker.root, "push", "-q", "-f", "origin", "refs/notes/vivary/guard")
    fetch_notes(victim)

    proc = run(victim, "transition", "--json", stdin=MOVE)
    assert proc.returncode == 1, proc.stderr
    assert out(proc)["error_type"] == "policy_untrusted"
    (line,) = proc.stderr.splitlines()
    assert "release:9" in line and f"touch {marker}" in line
    assert "strato guard trust release:9" in line and "--show" in line
    assert not marker.exists()
    assert history(victim) == ["registered"]  # refused before anything was written

    shown = run(victim, "trust", "release:9", "--show", "--json")
    assert shown.returncode == 0, shown.stderr
    doc = out(shown)
    assert doc["status"] == "unapproved" and doc["approved"] is False
    assert doc["commands"] == [
        {"edge": "draft->review", "id": "build", "argv": ["sh", "-c", f"touch {marker}"]}
    ]
    plain = run(victim, "trust", "release:9", "--show")
    assert f"touch {marker}" in plain.stdout and "not approved" in plain.stdout
    assert run(victim, "transition", stdin=MOVE).returncode == 1  # --show approves nothing
    assert not marker.exists()

    trusted = run(victim, "trust", "release:9")
    assert trusted.returncode == 0, trusted.stderr
    applied = run(victim, "transition", "--json", stdin=MOVE)
    assert applied.returncode == 0 and out(applied)["status"] == "applied", applied.stderr
    assert marker.exists()


def test_the_approval_is_of_one_policy_in_one_repository(clones: Clones) -> None:
    """Registering at one's own terminal approves, but only there: the attacker's own
    approval (same user config, another clone) is not the victim's; a policy changed by
    an unsigned upgrade is asked about again; a revoked approval refuses again."""
    victim, attacker, marker = clones.victim, clones.attacker, clones.marker
    registered = run(attacker, "register", stdin=touching(marker))
    assert registered.returncode == 0 and "approved the policy" in registered.stderr
    git(attacker.root, "push", "-q", "origin", "refs/notes/vivary/guard")
    fetch_notes(victim)
    refused = run(victim, "transition", stdin=MOVE)
    assert out(refused)["error_type"] == "policy_untrusted" and not marker.exists()
    assert "not approved" in refused.stderr

    approve_policy(victim, "release:9")
    later = marker.with_name("later")
    signedops.upgrade(attacker.repo, {
        "resource_id": "release:9",
        "new_graph": {"draft": ["review", "parked"], "review": []},
        "new_edge_predicates": {
            **touching(marker)["edge_predicates"],
            "draft->parked": [{"id": "x", "statement": f'command_exit_zero(["touch", "{later}"])'}],
        },
        "new_terminal": ["review"],
        "rationale": "one more edge",
    })
    git(attacker.root, "push", "-q", "origin", "refs/notes/vivary/guard")
    fetch_notes(victim)
    changed = run(victim, "transition", stdin=MOVE)
    assert out(changed)["error_type"] == "policy_untrusted"
    assert "changed since you approved it" in changed.stderr and "parked" not in changed.stderr
    assert not marker.exists() and not later.exists()

    approve_policy(victim, "release:9")
    revoked = run(victim, "trust", "release:9", "--revoke", "--json")
    assert revoked.returncode == 0 and out(revoked)["status"] == "revoked"
    assert out(run(victim, "transition", stdin=MOVE))["error_type"] == "policy_untrusted"
    assert not marker.exists()
    again = run(victim, "trust", "release:9", "--revoke")
    assert again.returncode == 0 and "nothing was approved" in again.stdout


def test_a_rewritten_notes_history_is_refused_before_any_predicate(clones: Clones) -> None:
    """The victim registered (and so approved) the policy; the attacker force-pushes a
    notes history that does not contain the victim's (same ledgers, another commit).
    After the forced fetch the transition says ledger_rewritten and runs nothing."""
    victim, attacker, marker = clones.victim, clones.attacker, clones.marker
    assert run(victim, "register", stdin=touching(marker)).returncode == 0
    git(victim.root, "push", "-q", "origin", "refs/notes/vivary/guard")
    fetch_notes(attacker)
    tree = git(attacker.root, "rev-parse", "refs/notes/vivary/guard^{tree}").strip()
    orphan = git(attacker.root, "commit-tree", tree, "-m", "rewritten").strip()
    git(attacker.root, "update-ref", "refs/notes/vivary/guard", orphan)
    git(attacker.root, "push", "-q", "-f", "origin", "refs/notes/vivary/guard")
    fetch_notes(victim)
    assert git(victim.root, "rev-parse", "refs/notes/vivary/guard").strip() == orphan

    proc = run(victim, "transition", "--json", stdin=MOVE)
    assert proc.returncode == 1, proc.stderr
    doc = out(proc)
    assert doc["error_type"] == "ledger_rewritten" and "rewritten" in doc["message"], doc
    assert len(proc.stderr.splitlines()) == 1
    assert not marker.exists()
    assert git(victim.root, "rev-parse", "refs/notes/vivary/guard").strip() == orphan  # no write


def test_a_line_rewritten_inside_the_history_is_refused_before_any_predicate(
    ws: Workspace, tmp_path: Path
) -> None:
    """A notes commit that changes a line already written, digest recomputed so the chain
    holds (as anyone who can push the notes ref can), is a break of that ledger's
    history: the ledger alone looks sound, only verify's history check sees it."""
    marker = tmp_path / "pwned"
    ws.commit({".vivary/guard/config.toml": "allow_commands = true\n"}, "guard: commands on")
    assert run(ws, "register", stdin=touching(marker)).returncode == 0
    anchor = notes.anchor_id(store.anchor_content("release:9"))
    (line,) = ledger_text(ws, anchor).splitlines()
    entry = json.loads(line)
    entry["ts_ms"] += 1
    put_ledger(ws, anchor, seal({k: v for k, v in entry.items() if k != "entry_digest"})[1])
    proc = run(ws, "transition", "--json", stdin=MOVE)
    assert proc.returncode == 1 and out(proc)["error_type"] == "ledger_rewritten", proc.stdout
    assert not marker.exists()


def test_trust_by_checksum_approves_only_the_policy_that_was_shown(clones: Clones) -> None:
    """Between `--show` and the approval a fetch may swap the policy in force: with the
    checksum `--show` printed, only that policy is approved."""
    victim, attacker, marker = clones.victim, clones.attacker, clones.marker
    engine.register(attacker.repo, touching(marker))
    git(attacker.root, "push", "-q", "-f", "origin", "refs/notes/vivary/guard")
    fetch_notes(victim)
    shown = out(run(victim, "trust", "release:9", "--show", "--json"))["checksum"]
    assert shown in run(victim, "trust", "release:9", "--show").stdout  # printed whole

    other = "0" * 64
    swapped = run(victim, "trust", "release:9", "--checksum", other, "--json")
    assert swapped.returncode == 1 and out(swapped)["error_type"] == "policy_changed"
    assert len(swapped.stderr.splitlines()) == 1 and "nothing approved" in swapped.stderr
    assert run(victim, "transition", stdin=MOVE).returncode == 1 and not marker.exists()
    assert run(victim, "trust", "release:9", "--checksum", "abc").returncode == 2
    assert run(victim, "trust", "release:9", "--show", "--checksum", shown).returncode == 2

    assert run(victim, "trust", "release:9", "--checksum", shown).returncode == 0
    assert run(victim, "transition", stdin=MOVE).returncode == 0 and marker.exists()
