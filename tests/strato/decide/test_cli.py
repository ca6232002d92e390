"""`strato decide --governed` and `strato receipt` as real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import console
from tests.support import governed as b
from tropo.governed.capsule import is_intact
from tropo.governed.capsule_graph import GRAPH_CHECK
from tropo.governed.receipt import verify_receipt

STRATO = [sys.executable, "-m", "strato.cli"]
PASSED = ("--check", "tropo-check=passed", "--actor", "agent:example", "--harness", "test")


def strato(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return console.run("strato", *args, input=stdin)


@pytest.fixture
def request_file(tmp_path: Path) -> Callable[[Any], str]:
    def write(doc: Any) -> str:
        path = tmp_path / "request.json"
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
        return str(path)

    return write


def test_governed_is_required() -> None:
    proc = strato("decide", "--json", "request.json")
    assert proc.returncode == 2
    assert "--governed" in proc.stderr and "Traceback" not in proc.stderr


def test_json_decision_from_stdin() -> None:
    proc = strato("decide", "--governed", "--json", "-", stdin=json.dumps(b.request()))
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["schema"] == "vivary.strato-decision/v0"
    assert document["decision"] == "act"
    assert proc.stdout == json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n"


def test_text_summary_and_strict(request_file: Callable[[Any], str]) -> None:
    path = request_file(b.request(b.with_unknown(b.capsule())))
    proc = strato("decide", "--governed", path)
    assert (proc.returncode, proc.stdout) == (
        0,
        "strato decide: request_gate\nreasons: gate_required\n",
    )
    assert strato("decide", "--governed", "--strict", path).returncode == 1
    acting = request_file(b.request())
    assert strato("decide", "--governed", "--strict", acting).returncode == 0


def test_refusal_exits_2_even_without_strict(request_file: Callable[[Any], str]) -> None:
    proc = strato("decide", "--governed", "--json", request_file({**b.request(), "status": "ok"}))
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["reason_codes"] == ["unknown_field:status"]
    assert proc.stderr.count("\n") == 1 and "unknown_field:status" in proc.stderr


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("{not json", "invalid_request_document"),
        ('{"schema": 1, "schema": 2}', "invalid_request_document"),
        ("[" * 10000 + "]" * 10000, "request_too_deeply_nested"),
    ],
    ids=["malformed", "duplicate-keys", "nested-10000"],
)
def test_unreadable_documents(request_file: Callable[[Any], str], text: str, code: str) -> None:
    proc = strato("decide", "--governed", "--json", request_file(text))
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["reason_codes"] == [code]
    assert proc.stderr.startswith("strato: ") and proc.stderr.count("\n") == 1


def test_missing_file_is_an_unreadable_document(tmp_path: Path) -> None:
    proc = strato("decide", "--governed", "--json", str(tmp_path / "absent.json"))
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["reason_codes"] == ["invalid_request_document"]


def test_duplicate_keys_diverge_from_upstream_on_purpose(
    request_file: Callable[[Any], str], upstream: Callable[[str], Path]
) -> None:
    """vivary-strato lets the last duplicate key win; we refuse the document, so a
    reviewer and the decision can never read two different requests."""
    text = json.dumps(b.request())
    doubled = text.replace(
        '"authority_class": "contributor"',
        '"authority_class": "owner", "authority_class": "contributor"',
    )
    path = request_file(doubled)
    theirs = subprocess.run(
        [str(upstream("strato")), "decide", "--governed", "--json", path],
        capture_output=True,
        text=True,
        check=False,
    )
    assert theirs.returncode == 0 and json.loads(theirs.stdout)["decision"] == "act"
    ours = strato("decide", "--governed", "--json", path)
    assert ours.returncode == 2
    assert "duplicate key 'authority_class'" in ours.stderr


def receipt_cli(tmp_path: Path, capsule: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "capsule.json"
    path.write_text(json.dumps(capsule), encoding="utf-8")
    return strato("receipt", str(path), *args)


def test_receipt_command_builds_a_verifying_receipt(tmp_path: Path) -> None:
    capsule = b.capsule()
    proc = receipt_cli(
        tmp_path,
        capsule,
        *PASSED,
        "--provenance",
        "run=run-1",
        "--created-at",
        "2026-07-26T12:01:00Z",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    receipt = json.loads(proc.stdout)
    assert verify_receipt(receipt, capsule) == []
    assert receipt == b.receipt(capsule)
    assert receipt["claims_verified"] == [claim["id"] for claim in capsule["claims"]]


def test_receipt_from_a_checks_file(tmp_path: Path) -> None:
    checks = tmp_path / "checks.json"
    checks.write_text(json.dumps([{**GRAPH_CHECK, "outcome": "failed", "detail": "2 findings"}]))
    proc = receipt_cli(
        tmp_path,
        b.capsule(),
        "--checks",
        str(checks),
        "--actor",
        "agent:example",
        "--harness",
        "test",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("1 check(s), 0/13 claims verified\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--check", "lint=passed"], "required checks: tropo-check"),
        (["--check", "tropo-check=green"], "outcome must be one of"),
        (["--check", "tropo-check=passed", "--created-at", "noon"], "--created-at"),
    ],
)
def test_receipt_refuses_what_would_not_verify(tmp_path: Path, args: list[str], message: str) -> None:
    proc = receipt_cli(tmp_path, b.capsule(), *args, "--actor", "a", "--harness", "h")
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_receipt_refuses_an_edited_capsule(tmp_path: Path) -> None:
    capsule = b.capsule()
    capsule["claims"][0]["evidence"] = [{"kind": "forged"}]
    assert not is_intact(capsule)
    proc = receipt_cli(tmp_path, capsule, *PASSED)
    assert proc.returncode == 2 and "not an intact" in proc.stderr


def test_help_has_examples() -> None:
    for command in ("decide", "receipt"):
        proc = strato(command, "--help")
        assert proc.returncode == 0 and "Example: strato " + command in proc.stdout
