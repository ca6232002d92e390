"""``strato guard`` as a subprocess: JSON in and out, exit codes, stderr, no tracebacks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from strato.guard import store
from tests.support import console
from tests.support.guard import (
    POLICY,
    Key,
    Workspace,
    ledger_text,
    out,
    put_ledger,
    run,
    ssh_sign,
)
from tests.support.repos import commit_all, git

RID = "cli:1"


def registered(ws: Workspace) -> None:
    proc = run(ws, "register", stdin={"resource_id": RID, **copy.deepcopy(POLICY)})
    assert proc.returncode == 0 and out(proc)["status"] == "registered"


def test_register_transition_history_exit_codes(ws: Workspace) -> None:
    registered(ws)
    again = run(ws, "register", stdin={"resource_id": RID, **copy.deepcopy(POLICY)})
    assert again.returncode == 0 and out(again)["status"] == "exists"
    move = {"resource_id": RID, "from_state": "draft", "to_state": "review"}
    no = run(ws, "transition", "--json", stdin=move)
    assert no.returncode == 1 and out(no)["status"] == "refused"
    (ws.root / "NOTES.md").write_text("n\n")
    yes = run(ws, "transition", stdin=move)
    assert yes.returncode == 0 and out(yes)["current_state"] == "review"
    stale = run(ws, "transition", stdin=move)
    assert stale.returncode == 1
    assert out(stale) == {
        "status": "error",
        "error_type": "stale_from_state",
        "message": out(stale)["message"],
    }
    assert stale.stderr.count("\n") == 1 and "stale_from_state" in stale.stderr
    hist = out(run(ws, "history", stdin={"resource_id": RID}))
    assert [e["outcome"] for e in hist["ledger"]] == ["registered", "refused", "applied"]


@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "not json",
        "[1, 2]",
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"resource_id": RID, "from_state": "a", "to_state": "b", "extra": 1}),
    ],
    ids=["empty", "not-json", "array", "nested-100000-deep", "extra-key"],  # short: ids go into the env
)
def test_bad_input_is_usage_and_changes_nothing(ws: Workspace, stdin: str) -> None:
    registered(ws)
    tip = git(ws.root, "rev-parse", store.REF)
    proc = run(ws, "transition", stdin=stdin)
    assert proc.returncode == 2
    assert out(proc)["error_type"] == "invalid_request"
    assert git(ws.root, "rev-parse", store.REF) == tip


def test_outside_a_repository_is_usage(tmp_path: Path) -> None:
    proc = run(tmp_path, "history", stdin={"resource_id": "x"})
    assert proc.returncode == 2 and "not a git repository" in proc.stderr
    assert run(tmp_path, "verify").returncode == 2


def test_authorize_sign_override_verify_review(ws: Workspace, key: Key) -> None:
    ws.trust(key.signers_line("alice@example.com"))
    assert run(ws, "pin").returncode == 0
    base = commit_all(ws.root, "pin: no ledgers yet")
    ws.commit({"NOTES.md": "n\n"}, "work under review")
    registered(ws)
    run(ws, "transition", stdin={"resource_id": RID, "from_state": "draft", "to_state": "review"})
    ask = {
        "kind": "override",
        "resource_id": RID,
        "from_state": "review",
        "to_state": "released",
        "rationale": "ship it",
    }
    payload_file = ws.tmp / "payload.json"
    auth = out(run(ws, "authorize", "--json", "--out", str(payload_file), stdin=ask))
    assert auth["namespace"] == "stratum-guard-override"
    assert payload_file.read_text() == auth["payload"]
    assert (
        auth["command"] == f"ssh-keygen -Y sign -f <key> -n stratum-guard-override {payload_file}"
    )
    # the printed payload is exactly what ssh-keygen signs for us, and what `sign` signs
    by_hand = ssh_sign(key, auth["namespace"], payload_file.read_bytes(), ws.tmp)
    signed = run(ws, "sign", "--key", str(key.path), stdin=ask)
    assert signed.returncode == 0 and signed.stdout.startswith("-----BEGIN SSH SIGNATURE-----")
    del ask["kind"]
    ok = run(ws, "override", stdin={**ask, "authorization": signed.stdout})
    assert ok.returncode == 0 and out(ok)["authorized_by"] == "alice@example.com"
    replay = run(ws, "override", stdin={**ask, "from_state": "review", "authorization": by_hand})
    assert replay.returncode == 1
    verified = run(ws, "verify")
    assert verified.returncode == 0 and "1 resources, 3 entries" in verified.stdout
    moved = run(ws, "review", "--base", base)  # the CLI's writes moved the work tree's pin
    assert moved.returncode == 0 and "3 new entries" in moved.stdout, moved.stdout
    ws.pin()
    rev = run(ws, "review", "--base", base, "--markdown")
    assert (
        rev.returncode == 0 and "| ` deviation ` |" in rev.stdout and "alice@example.com" in rev.stdout
    )
    as_json = out(run(ws, "review", "--base", base, "--json"))
    kinds = [e["kind"] for e in as_json["entries"]]
    assert as_json["ok"] and kinds == ["register", "transition", "deviation"]
    assert run(ws, "review", "--base", "no-such-rev").returncode == 2


def test_verify_reports_resource_and_line(ws: Workspace) -> None:
    registered(ws)
    run(ws, "transition", stdin={"resource_id": RID, "from_state": "draft", "to_state": "review"})
    anchor = git(ws.root, "notes", "--ref=vivary/guard", "list").split()[1]
    lines = ledger_text(ws, anchor).splitlines()
    put_ledger(ws, anchor, lines[0] + "\n" + lines[1].replace('"agent"', '"human"') + "\n")
    proc = run(ws, "verify")
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"guard ledger broken: '{RID}' line 2: entry_digest")
    report = out(run(ws, "verify", "--json"))
    assert report["ok"] is False
    assert report["first_break"]["resource_id"] == RID and report["first_break"]["line"] == 2


def test_every_command_has_an_example_in_help(ws: Workspace) -> None:
    for command in (
        "register",
        "transition",
        "override",
        "migrate",
        "upgrade",
        "apply-upgrade",
        "history",
        "authorize",
        "sign",
        "verify",
        "review",
    ):
        proc = console.run("strato", "guard", command, "--help")
        assert proc.returncode == 0, proc.stderr
        assert "Example" in proc.stdout and "--root" in proc.stdout, command


def test_a_review_error_under_markdown_is_markdown_for_the_comment(ws: Workspace) -> None:
    """The CI recipe posts stdout as the pull-request comment, so an error there reads as Markdown."""
    base = git(ws.root, "rev-parse", "HEAD").strip()
    registered(ws)
    proc = run(ws, "review", "--base", base, "--markdown")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "review_unpinned" in proc.stderr
    assert proc.stdout.startswith("### Guard review **failed**: ` review_unpinned `\n\n`` base ")
    assert "run `strato guard pin` on the base branch" in proc.stdout and proc.stdout.endswith(" ``\n")
    bad = run(ws, "review", "--base", "no`such", "--markdown")
    assert bad.returncode == 2 and bad.stdout.startswith("### Guard review **failed**: ` invalid_revision `")
    assert "``" in bad.stdout  # the backtick of the name cannot close the span
    assert out(run(ws, "review", "--base", base, "--markdown", "--json"))["error_type"] == "review_unpinned"


def test_review_fails_closed_without_a_base_pin(ws: Workspace) -> None:
    base = git(ws.root, "rev-parse", "HEAD").strip()
    registered(ws)
    proc = run(ws, "review", "--base", base)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "review_unpinned" in proc.stderr
    assert "run `strato guard pin` on the base branch" in proc.stderr
    tip = git(ws.root, "rev-parse", store.REF).strip()
    pinned = run(ws, "pin", "--from", "local", "--json")
    assert pinned.returncode == 0 and out(pinned)["notes_tip"] == tip
    assert (ws.root / ".vivary/guard/notes-tip").read_text() == tip + "\n"
    # a CI that keeps the accepted notes passes them instead; nothing is new then
    trusted = run(ws, "review", "--base", base, "--base-notes", tip, "--json")
    assert trusted.returncode == 0 and out(trusted)["entries"] == []
    assert run(ws, "review", "--base", base, "--base-notes", "nope").returncode == 1
