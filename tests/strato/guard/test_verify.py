"""Tampering with ledgers through real git (``git notes``, ``git update-ref``) and what
:func:`verify_repository` reports: the resource and the first broken line."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from strato.guard import engine, store, verify_repository
from strato.guard.canonical import seal
from tests.conftest import git
from tests.strato.guard.conftest import (
    POLICY,
    Key,
    Workspace,
    ledger_text,
    put_ledger,
    ssh_sign,
)

RID = "svc:api"


@pytest.fixture
def busy(ws: Workspace, key: Key) -> Workspace:
    """A resource with register, refused, applied and a signed deviation (4 lines)."""
    ws.trust(key.signers_line("alice"))
    engine.register(ws.repo, {"resource_id": RID, **copy.deepcopy(POLICY)})
    engine.register(ws.repo, {"resource_id": "svc:other", **copy.deepcopy(POLICY)})
    move = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    assert engine.transition(ws.repo, move)["status"] == "refused"
    (ws.root / "NOTES.md").write_text("n\n")
    assert engine.transition(ws.repo, move)["status"] == "applied"
    ask = {"resource_id": RID, "from_state": "review", "to_state": "released", "rationale": "ok"}
    payload, ns = engine.authorization_request(ws.repo, {"kind": "override", **ask})
    sig = ssh_sign(key, ns, payload.encode(), ws.tmp)
    engine.override(ws.repo, {**ask, "authorization": sig})
    assert verify_repository(ws.repo).ok
    return ws


def anchor(ws: Workspace, rid: str = RID) -> str:
    from tropo.git.notes import anchor_id

    return anchor_id(store.anchor_content(rid))


def lines(ws: Workspace) -> list[str]:
    return ledger_text(ws, anchor(ws)).splitlines()


def put(ws: Workspace, text: str, target: str | None = None) -> None:
    """Overwrite a ledger the way anyone who can push the notes ref can."""
    put_ledger(ws, target or anchor(ws), text)


def reseal(entries: list[dict[str, Any]]) -> str:
    """Recompute every digest so that the chain itself holds (a careful forger)."""
    out, prev = [], ""
    for entry in entries:
        body = {k: v for k, v in entry.items() if k != "entry_digest"}
        body["prev_digest"] = prev
        sealed, line = seal(body)
        prev = sealed["entry_digest"]
        out.append(line)
    return "".join(out)


def first_break(ws: Workspace, **kw: Any) -> tuple[str | None, int | None, str]:
    report = verify_repository(ws.repo, **kw)
    assert not report.ok
    chain = [b for b in report.breaks if b.line is not None] or report.breaks
    brk = chain[0]
    return brk.resource_id, brk.line, brk.message


def test_clean_repository_verifies(busy: Workspace) -> None:
    report = verify_repository(busy.repo)
    assert report.ok and report.resources == 2 and report.entries == 5


def test_edited_line(busy: Workspace) -> None:
    text = lines(busy)
    assert '"refused"' in text[1]
    text[1] = text[1].replace('"refused"', '"applied"')
    put(busy, "\n".join(text) + "\n")
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 2) and "edited" in message


def test_deleted_and_reordered_lines(busy: Workspace) -> None:
    text = lines(busy)
    put(busy, "\n".join([text[0], text[2], text[3]]) + "\n")
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 2) and "dropped or reordered" in message
    put(busy, "\n".join([text[0], text[2], text[1], text[3]]) + "\n")
    assert first_break(busy)[:2] == (RID, 2)


def test_forged_chain_is_caught_by_the_notes_history(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    entries[1]["outcome"] = "applied"  # pretend the refused attempt passed
    entries[1]["to_state"] = "review"
    put(busy, reseal(entries[:2]))
    report = verify_repository(busy.repo)
    assert not report.ok
    assert any(
        "rewritten, not appended to" in b.message and b.resource_id == RID for b in report.breaks
    )


def test_forged_unsigned_deviation_is_caught(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    del entries[-1]["verdict"]["authorization"]
    put(busy, reseal(entries))
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 4) and "unsigned" in message


def test_forged_signature_of_another_entry_is_caught(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    entries[-1]["verdict"]["authorization"]["rationale"] = "changed"
    entries[-1]["rationale"] = entries[-1]["rationale"].replace(": ok", ": changed")
    put(busy, reseal(entries))
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 4) and "does not verify" in message


def test_illegal_step_is_caught(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)][:2]
    entries[1].update(from_state="draft", to_state="released", outcome="applied")
    put(busy, reseal(entries))
    rid, line, message = first_break(busy)
    assert (rid, line) == (RID, 2) and "not in the policy" in message


def test_note_moved_to_another_resource(busy: Workspace) -> None:
    text = ledger_text(busy, anchor(busy))
    put(busy, text, anchor(busy, "svc:other"))
    report = verify_repository(busy.repo)
    assert any(
        b.message == "note does not belong to the resource it registers" for b in report.breaks
    )


def test_rewound_notes_ref_is_caught_by_reflog_and_since(busy: Workspace) -> None:
    tip = git(busy.root, "rev-parse", store.REF).strip()
    git(busy.root, "update-ref", store.REF, f"{store.REF}~1")
    report = verify_repository(busy.repo)
    assert any("was rewritten" in b.message for b in report.breaks)
    # a fresh clone has no reflog; --since (the remote's tip) still catches it
    git(busy.root, "reflog", "expire", "--expire=all", "--all")
    git(busy.root, "update-ref", "refs/remotes/origin/guard-notes", tip)
    assert verify_repository(busy.repo).ok
    report = verify_repository(busy.repo, since=[tip])
    assert [b.message for b in report.breaks] == [
        f"{store.REF} was rewritten: {tip[:12]} is not in its history"
    ]


def test_operations_refuse_a_broken_ledger(busy: Workspace) -> None:
    text = lines(busy)
    put(busy, "\n".join(text[:2] + text[3:]) + "\n")
    from strato.guard.errors import GuardError

    with pytest.raises(GuardError) as info:
        engine.history(busy.repo, {"resource_id": RID})
    assert info.value.error_type == "ledger_corrupt" and "line 3" in info.value.message


def test_wrong_types_and_deep_json_are_breaks_not_crashes(busy: Workspace) -> None:
    entries = [json.loads(line) for line in lines(busy)]
    entries[1]["from_state"] = ["draft"]
    put(busy, reseal(entries))
    assert first_break(busy)[1:] == (2, "from_state has the wrong type")
    put(busy, lines(busy)[0] + "\n" + "[" * 50_000 + "]" * 50_000 + "\n")
    assert first_break(busy)[1:] == (2, "not JSON")
