"""Issue 12's attacks on pull-request review, each with real git and real ssh-keygen: an
attacker who controls every ledger byte and every field, and no key the base trusts.

Each must be refused with a reason naming the resource, the line and why; the legit
flows next to them must pass.
"""

from __future__ import annotations

import base64
import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest

from strato.guard import engine, signedops, store
from strato.guard.errors import GuardError
from strato.guard.review import ReviewReport, review
from strato.guard.sshsig import MAGIC, ssh_string
from strato.guard.verify import verify_repository
from tests.support.guard import (
    POLICY,
    RID,
    Key,
    Workspace,
    anchor,
    at_review,
    drop_ledger,
    forge,
    ledger,
    make_key,
    outside_code,
    sign_override,
    ssh_sign,
)
from tests.support.repos import git

Y2030 = 1893456000  # 2030-01-01T00:00:00Z


@pytest.fixture
def pr(ws: Workspace, key: Key) -> str:
    """main trusts alice and pins no ledgers; branch ``feature`` reaches review. The base."""
    ws.trust(key.signers_line("alice@example.com"))
    base = ws.pin("main: trust alice, no ledgers")
    git(ws.root, "checkout", "-q", "-b", "feature")
    ws.commit({"NOTES.md": "n\n"}, "feature work")
    at_review(ws)
    return base


def judged(ws: Workspace, base: str, **kw: Any) -> ReviewReport:
    ws.pin()
    return review(ws.repo, base, **kw)


def refusal(report: ReviewReport) -> str:
    """The first break, as the CLI prints it: one line naming resource and line."""
    assert not report.ok
    text = str(report.verify.breaks[0])
    assert "\n" not in text
    return text


def test_legit_branch_passes(ws: Workspace, key: Key, pr: str) -> None:
    signedops.override(ws.repo, sign_override(ws, key, "ship"))
    report = judged(ws, pr)
    assert report.ok, report.verify.breaks
    assert [r.kind for r in report.rows] == ["register", "transition", "deviation"]


def test_1_unsigned_policy_replacement(ws: Workspace, pr: str) -> None:
    entries = ledger(ws)
    bare = {**POLICY, "edge_predicates": {}, "stakes": {}}
    from strato.guard import policy as policy_mod

    pol = policy_mod.parse(bare)
    for resolved_by in ("system", "agent", "human"):
        change = {
            **entries[-1],
            "kind": "graph_version",
            "outcome": "graph_version",
            "from_state": "review",
            "to_state": "review",
            "resolved_by": resolved_by,
            "payload_digest": pol.checksum,
            "rationale": "cleanup",
            "idempotency_key": None,
            "verdict": {
                "operation": "upgrade" if resolved_by != "human" else "migrate",
                "policy": pol.to_json(),
                "checksum": pol.checksum,
                "graph_version": 2,
            },
        }
        after = {**entries[-1], "from_state": "review", "to_state": "released"}
        forge(ws, [*entries, change, after])
        assert not verify_repository(ws.repo).ok  # the local check refuses it as well
        why = refusal(judged(ws, pr))
        assert f"{RID!r} line 3:" in why, why
        assert any(w in why for w in ("resolved_by", "not additive", "authorization")), why


def test_2_revoked_key_chosen_by_git_head(ws: Workspace, key: Key, tmp_path: Path) -> None:
    ws.trust(key.signers_line("alice@example.com"))
    alice_era = git(ws.root, "rev-parse", "HEAD").strip()
    bob = make_key(tmp_path, "ed25519", "bob")
    ws.trust(bob.signers_line("bob@example.com"))
    base = ws.pin("main: bob replaces alice")
    git(ws.root, "checkout", "-q", "-b", "feature")
    ws.commit({"NOTES.md": "n\n"}, "feature work")
    at_review(ws)
    git(ws.root, "checkout", "-q", "--detach", alice_era)  # HEAD trusts alice again
    signedops.override(ws.repo, sign_override(ws, key, "old key"))
    git(ws.root, "checkout", "-q", "feature")
    report = judged(ws, base)
    why = refusal(report)
    assert f"{RID!r} line 3:" in why and "not an allowed signer" in why
    assert [r.kind for r in report.rows][-1] == "deviation"  # listed, not hidden as "old"


def test_3_forged_applied_lines(ws: Workspace, pr: str) -> None:
    entries = ledger(ws)
    bare = {
        **entries[-1],
        "from_state": "review",
        "to_state": "released",
        "outcome": "applied",
        "verdict": None,
        "payload_digest": "x",
        "resolved_by": "human",
    }
    forge(ws, [*entries, bare])
    why = refusal(judged(ws, pr))
    assert f"{RID!r} line 3:" in why and "resolved_by" in why
    # a careful forger copies a real verdict and claims the predicate held
    met = copy.deepcopy(entries[-1]["verdict"])
    met["predicates"][0].update(id="tests", statement='server_file_exists("PASSED")')
    met["meta"]["guard_evidence"][0].update(
        id="tests", statement='server_file_exists("PASSED")', evidence="PASSED exists"
    )
    met["predicates"][0]["type"] = "deterministic"
    met["stakes"] = "paranoid"
    forge(ws, [*entries, {**entries[-1], "from_state": "review", "to_state": "released", "verdict": met}])
    why = refusal(judged(ws, pr))
    assert f"{RID!r} line 3:" in why and "PASSED is not in the reviewed commit" in why


def test_4_rewritten_notes_ref(ws: Workspace, key: Key, pr: str, tmp_path: Path) -> None:
    """After a merge pins the notes, an attacker deletes and re-creates the ledger."""
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge", "feature")
    ws.pin()
    base = git(ws.root, "rev-parse", "HEAD").strip()
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(ws.root, "remote", "add", "origin", str(remote))
    git(ws.root, "push", "-q", "origin", "main", store.REF)
    git(ws.root, "checkout", "-q", "-b", "attack")
    git(ws.root, "update-ref", "-d", store.REF)
    git(ws.root, "reflog", "expire", "--expire=now", "--all")
    engine.register(
        ws.repo, {"resource_id": RID, **{**copy.deepcopy(POLICY), "edge_predicates": {}, "stakes": {}}}
    )
    for src, dst in (("draft", "review"), ("review", "released")):
        engine.transition(ws.repo, {"resource_id": RID, "from_state": src, "to_state": dst})
    why = refusal(judged(ws, base))
    assert "does not descend from the base's notes commit" in why
    # the same after a force-push, from a fresh clone that never saw the old notes
    git(ws.root, "push", "-q", "-f", "origin", "attack", f"+{store.REF}:{store.REF}")
    git(ws.root, "push", "-q", "-f", "origin", f"+{store.REF}:{store.REF}")
    git(remote, "gc", "-q", "--prune=now")
    clone = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(clone, "fetch", "-q", "origin", f"+{store.REF}:{store.REF}")
    from tropo.git import repo as gitrepo

    with pytest.raises(GuardError) as caught:
        review(gitrepo.require(clone), "origin/main", "origin/attack")
    assert caught.value.error_type == "review_unpinned"
    assert "not in this clone" in caught.value.message and "rewritten" in caught.value.message


@pytest.mark.parametrize(
    ("options", "now", "ok"),
    [
        ("", Y2030 * 2, True),
        ('valid-before="20300101"', Y2030 - 10, True),
        ('valid-before="20300101"', Y2030 + 10, False),
        ('valid-after="20300101"', Y2030 - 10, False),
        ('valid-after="20300101"', Y2030 + 10, True),
    ],
)
def test_5_key_validity_is_judged_at_review_time(
    ws: Workspace, key: Key, tmp_path: Path, options: str, now: int, ok: bool
) -> None:
    ws.trust(key.signers_line("alice@example.com", options))  # the base's line decides
    base = ws.pin("main")
    git(ws.root, "checkout", "-q", "-b", "feature")
    ws.commit({"NOTES.md": "n\n"}, "feature work")
    at_review(ws)
    if options:  # the same name without the window, so that the branch can write it at all
        ws.trust(key.signers_line("alice@example.com"))
    signedops.override(ws.repo, sign_override(ws, key, "ship"))  # ts_ms is now, whatever it says
    report = judged(ws, base, now_s=now)
    if ok:
        assert report.ok, report.verify.breaks
    else:
        why = refusal(report)
        assert f"{RID!r} line 3:" in why and "not an allowed signer" in why


def test_6_negated_namespace_like_openssh(ws: Workspace, key: Key, pr: str, tmp_path: Path) -> None:
    from strato.guard import signers

    message = tmp_path / "m"
    message.write_bytes(b"payload")
    armor = ssh_sign(key, "stratum-guard-override", b"payload", tmp_path)
    (tmp_path / "m.sig").write_text(armor)
    for pattern in ("*,!stratum-guard-override", "stratum-guard-*", "!x,stratum-*", "x,?tratum*", "[s]*"):
        allowed = tmp_path / "allowed"
        allowed.write_text(key.signers_line("alice", f'namespaces="{pattern}"'))
        with message.open("rb") as data:
            proc = subprocess.run(
                ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "alice",
                 "-n", "stratum-guard-override", "-s", str(tmp_path / "m.sig")],
                stdin=data, capture_output=True, check=False,
            )
        ours = signers.parse(allowed.read_text())[0].allows("stratum-guard-override", 0)
        assert ours == (proc.returncode == 0), pattern


def test_7_markdown_injection(ws: Workspace, key: Key, pr: str) -> None:
    evil = "x\r\n\n| a | b |\n# pwned <img src=https://e.vil/x> <!-- hide `code` ||"
    signedops.override(ws.repo, sign_override(ws, key, evil))
    report = judged(ws, pr)
    md = report.markdown()
    for bad in ("\r", "\n# pwned", "| a | b |"):
        assert bad not in md, bad
    for bad in ("<img", "<!--", "`code`"):
        assert bad not in outside_code(md), bad  # shown inside a code span, never rendered
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(report.rows)
    assert all(line.count("|") - line.count("\\|") == 9 for line in table)
    assert "<img src=" in md and "alice@example.com" in md


def _negative_ecdsa_signature(key: Key) -> str:
    blob = base64.b64decode(key.public.split()[1])
    inner = ssh_string(key.public.split()[0].encode()) + ssh_string(
        ssh_string(b"\x80\x01") + ssh_string(b"\x01")
    )
    body = (
        MAGIC + (1).to_bytes(4, "big") + ssh_string(blob) + ssh_string(b"stratum-guard-override")
        + ssh_string(b"") + ssh_string(b"sha512") + ssh_string(inner)
    )
    text = base64.b64encode(body).decode()
    return "-----BEGIN SSH SIGNATURE-----\n" + text + "\n-----END SSH SIGNATURE-----\n"


def test_8_negative_ecdsa_mpint_is_a_clean_refusal(ws: Workspace, tmp_path: Path) -> None:
    ecdsa = make_key(tmp_path, "ecdsa", "carol")
    ws.trust(ecdsa.signers_line("carol"))
    at_review(ws)
    ask = {"resource_id": RID, "from_state": "review", "to_state": "released", "rationale": "r"}
    with pytest.raises(GuardError) as caught:
        signedops.override(ws.repo, {**ask, "authorization": _negative_ecdsa_signature(ecdsa)})
    assert caught.value.error_type == "override_unavailable"
    assert "malformed ECDSA signature" in caught.value.message


def test_replay_reorder_truncate_delete(ws: Workspace, key: Key, pr: str) -> None:
    signedops.override(ws.repo, sign_override(ws, key, "ship"))
    git(ws.root, "checkout", "-q", "main")
    git(ws.root, "merge", "-q", "--no-ff", "-m", "merge", "feature")
    base = ws.pin()
    git(ws.root, "checkout", "-q", "-b", "next")
    entries = ledger(ws)  # register, transition, deviation: all at the base
    back = {**entries[1], "from_state": "released", "to_state": "review"}
    rewritten = "line of the base's ledger rewritten or removed"
    cases = {  # the first reason given: base lines by the base comparison, new ones by verify
        "replayed deviation": ([*entries, entries[2]], "line 4: signature does not verify"),
        "reordered": ([entries[0], entries[2], entries[1]], f"line 2: {rewritten}"),
        "truncated": (entries[:2], f"line 3: {rewritten}"),
        "edited base line": ([entries[0], {**entries[1], "ts_ms": 1}, entries[2]], f"line 2: {rewritten}"),
        "unknown step": ([*entries, back], "line 4: edge released->review is not in the policy"),
    }
    for name, (forged, reason) in cases.items():
        forge(ws, forged)
        why = refusal(judged(ws, base))
        assert why.startswith(f"{RID!r} {reason}"), (name, why)
    git(ws.root, "notes", "--ref=vivary/guard", "remove", anchor())  # the marker only
    why = refusal(judged(ws, base))
    assert why == f"{RID!r}: ledger of the base unreadable in the head: ledger lines under ledgers/ but no note"
    forge(ws, entries)
    drop_ledger(ws, anchor())  # the note and every line
    why = refusal(judged(ws, base))
    assert why == f"{RID!r}: ledger of the base was deleted"


def test_entry_claiming_a_commit_the_base_never_had(ws: Workspace, pr: str) -> None:
    entries = ledger(ws)
    for claim in ("1" * 40, "main", "HEAD~1"):
        forge(ws, [entries[0], {**entries[1], "git_head": claim}])
        why = refusal(judged(ws, pr))
        assert f"{RID!r} line 2:" in why and f"claims commit {claim[:12]}, which this repository lacks" in why


def test_cert_authority_line_is_refused_with_its_line(ws: Workspace, key: Key) -> None:
    ws.trust("# ca\n", key.signers_line("*@example.com", "cert-authority"))
    at_review(ws)
    with pytest.raises(GuardError) as caught:
        signedops.override(ws.repo, sign_override(ws, key, "ship"))
    assert "line 2: cert-authority is not supported" in caught.value.message
