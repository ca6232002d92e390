"""``vivary logs`` and ``vivary logs email``: summaries and drafts of a receipt log, side by
side with the suite's front door (vivary 0.2.0) where it is installed."""

from __future__ import annotations

import email
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.console import run
from tests.support.requirements import missing, upstream_bin

VIVARY = Path(sys.executable).parent / "vivary"


def _receipt(tool: str, command: str, code: int, **extra: object) -> str:
    record = {"schema": "vivary.run_receipt.v1", "timestamp": f"2026-12-01T10:00:0{code}Z",
              "tool": tool, "version": "1", "command": command, "flags": ["--json"],
              "arg_count": 2, "exit_code": code, "ok": code == 0, "duration_ms": 7,
              "python": "3.11.7", "platform": "Linux", "receipt_source": "flag", **extra}
    return json.dumps(record)


LOG = "\n".join([
    _receipt("tropo", "check", 0),
    "not json at all",
    "[1, 2]",
    _receipt("exo", "board", 2, error_type="SystemExit", stdout="SECRET OUTPUT"),
    "",
    json.dumps({"unrelated": True}),
    _receipt("tropo", "find", 1, command_note="x", platform=r"C:\Users\me\secret.txt"),
    _receipt("create-vivary", "init", 0, version="re_abcdef123 file:///home/me/x"),
    '{"schema":"vivary.run_receipt.v1","torn',
]) + "\n"

CASES = [
    [],
    ["--json"],
    ["--tail", "2"],
    ["--failed", "--json"],
    ["--tail", "0", "--json"],
    ["--tail", "-3"],
    ["email", "--to", "help@example.org"],
    ["email", "--to", "a@b.c,d@e.f", "--subject", "Receipts please", "--json", "--failed"],
    ["email", "--to", "a@b.c", "--subject", "two\nlines"],
    ["email", "--to", "a@b.c", "--tail", "1", "--json"],
]


def _run(argv: list[str], cwd: Path, exe: list[str]) -> subprocess.CompletedProcess[str]:
    """Our `vivary` in process; another program (the suite's, or ours writing receipts
    as processes do) as a process."""
    if exe == [str(VIVARY)]:
        return run("vivary", *argv, cwd=cwd, env={"VIVARY_RECEIPT_LOG": "receipts.jsonl"})
    return subprocess.run([*exe, *argv], cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, "VIVARY_RECEIPT_LOG": "receipts.jsonl"})


# `vivary email ...` is the suite's other spelling of `vivary logs email ...`.
ARGVS = [["logs", *args] for args in CASES] + [args for args in CASES if args[:1] == ["email"]]


@pytest.mark.parametrize("argv", ARGVS, ids=" ".join)
def test_logs_matches_the_suites_front_door(argv: list[str], tmp_path: Path) -> None:
    python = upstream_bin("python")
    probe = python and subprocess.run([str(python), "-I", "-c", "import vivary_cli"],
                                      capture_output=True, check=False).returncode == 0
    if not probe:
        missing("the suite's front door (vivary==0.2.0) is not in the upstream venv: run `make upstream`")
    (tmp_path / "receipts.jsonl").write_text(LOG)
    ours = _run(argv, tmp_path, [str(VIVARY)])
    theirs = _run(argv, tmp_path, [str(python), "-I", "-m", "vivary_cli"])
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout)
    assert ours.stderr.strip() == theirs.stderr.strip()


def test_the_summary_keeps_receipt_keys_and_masks_paths(tmp_path: Path) -> None:
    (tmp_path / "receipts.jsonl").write_text(LOG)
    proc = _run(["logs", "--json"], tmp_path, [str(VIVARY)])
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert doc["summary"] == {"total": 4, "failed": 2, "invalid_lines": 4,
                              "tools": {"create-vivary": 1, "exo": 1, "tropo": 2}}
    assert "SECRET" not in proc.stdout and "command_note" not in proc.stdout
    assert "secret.txt" not in proc.stdout and "abcdef123" not in proc.stdout
    assert "/home/me" not in proc.stdout


def test_failed_and_tail_select_before_counting(tmp_path: Path) -> None:
    (tmp_path / "receipts.jsonl").write_text(LOG)
    doc = json.loads(_run(["logs", "--failed", "--tail", "1", "--json"], tmp_path,
                          [str(VIVARY)]).stdout)
    assert [r["command"] for r in doc["records"]] == ["find"]
    assert doc["summary"]["total"] == 1 and doc["summary"]["failed"] == 1


def test_a_missing_log_is_one_line_exit_1(tmp_path: Path) -> None:
    proc = _run(["logs", "absent.jsonl"], tmp_path, [str(VIVARY)])
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "vivary logs: receipt log not found\n"


def test_an_eml_draft_holds_the_summary_and_refuses_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "receipts.jsonl").write_text(LOG)
    proc = _run(["logs", "email", "--to", "help@example.org", "--out", "out/draft.eml",
                 "--json"], tmp_path, [str(VIVARY)])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"draft": "out/draft.eml", "records": 4}
    message = email.message_from_string((tmp_path / "out" / "draft.eml").read_text())
    assert message["To"] == "help@example.org"
    assert "total=4 failed=2 invalid_lines=4" in message.get_payload(decode=True).decode()
    (tmp_path / "elsewhere").write_text("keep")
    (tmp_path / "link.eml").symlink_to(tmp_path / "elsewhere")
    refused = _run(["logs", "email", "--to", "a@b.c", "--out", "link.eml"], tmp_path,
                   [str(VIVARY)])
    assert refused.returncode == 1
    assert refused.stderr == "vivary logs email: draft path must not be a symlink\n"
    assert (tmp_path / "elsewhere").read_text() == "keep"


def test_receipts_written_by_our_tools_read_back(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    for argv in (["tropo", "--help"], ["exo", "--version"], ["create-vivary", "--nope"]):
        _run([*argv[1:]], tmp_path, [str(bin_dir / argv[0])])
    doc = json.loads(_run(["logs", "--json"], tmp_path, [str(VIVARY)]).stdout)
    assert [(r["tool"], r["command"], r["exit_code"]) for r in doc["records"]] == \
        [("tropo", "help", 0), ("exo", "version", 0), ("create-vivary", "help", 2)]
    assert doc["summary"]["invalid_lines"] == 0
