"""The workflow miner over transcript fixtures: the third-strike rule, faults, secrets."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from strato.distill import service, transcripts
from strato.heartbeat import apply, engine
from strato.proposals import store
from strato.proposals.settings import Settings
from tests.support import console
from tests.support.heartbeat import T0
from tests.support.repos import git
from tests.support.transcripts import FLOW, OTHER, claude_session, codex_session, sources


def skills(root: Path, tmp_path: Path) -> list[dict[str, object]]:
    return service.extract(root, sources(tmp_path), 3, None)


def test_twice_proposes_nothing_three_times_in_two_sessions_proposes_one(ws: Path, tmp_path: Path) -> None:
    claude_session(tmp_path / "claude", "s1", ws, FLOW + OTHER)
    claude_session(tmp_path / "claude", "s2", ws, FLOW)
    assert skills(ws, tmp_path) == []
    claude_session(tmp_path / "claude", "s1", ws, FLOW + OTHER + FLOW)
    [candidate] = skills(ws, tmp_path)
    assert candidate["outcome"] == "new"
    assert candidate["files"] == [".agents/skills/git-status-then-pytest-then-git-commit/SKILL.md",
                                  ".claude/skills/git-status-then-pytest-then-git-commit/SKILL.md"]
    record = store.get(store.sidecar(ws), str(candidate["id"]))
    assert len(record["evidence"]) == 3
    text = record["files"][".claude/skills/git-status-then-pytest-then-git-commit/SKILL.md"]
    assert text.startswith("---\nname: git-status-then-pytest-then-git-commit\n")
    assert skills(ws, tmp_path)[0]["outcome"] == "known"  # same inputs, same revision
    codex_session(tmp_path / "codex", "c1", ws, ["git status", "pytest -q", "git commit -m done"])
    again = skills(ws, tmp_path)[0]
    assert again["id"] == candidate["id"] and again["revision"] != candidate["revision"]
    assert again["outcome"] == "revised"


def test_three_times_in_one_session_is_not_a_pattern(ws: Path, tmp_path: Path) -> None:
    claude_session(tmp_path / "claude", "s1", ws, FLOW + OTHER + FLOW + OTHER + FLOW)
    assert skills(ws, tmp_path) == []


def test_apply_writes_both_skill_folders_on_a_branch(ws: Path, tmp_path: Path) -> None:
    for n, calls in enumerate((FLOW + OTHER + FLOW, FLOW)):
        claude_session(tmp_path / "claude", f"s{n}", ws, calls)
    [candidate] = skills(ws, tmp_path)
    result = apply.apply(ws, str(candidate["id"]))
    changed = git(ws, "diff", "--name-only", "HEAD", result["branch"]).split()
    assert changed == candidate["files"]
    assert git(ws, "status", "--porcelain") == ""


def test_faulty_lines_are_skipped_and_counted(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = claude_session(tmp_path / "claude", "s1", ws, FLOW)
    with open(path, "ab") as fh:
        fh.write(b'{"type": "mystery-v9", "x": 1}\n')
        fh.write(b"\xff\xfe not utf-8\n")
        fh.write(b"[1, 2]\n")
        fh.write(b'{"type": "assistant", "message": {"content": [' + b"x" * 5000 + b"]}}\n")
        fh.write(b'{"type": "assistant", "message": {"conte')  # truncated mid-line
    claude_session(tmp_path / "claude", "elsewhere", tmp_path / "other-repo", FLOW)
    monkeypatch.setattr(transcripts, "MAX_LINE", 4096)
    _, stats = service.scan(ws, sources(tmp_path), None)
    assert stats.as_dict() | {"lines": 0} == {
        "files": 2, "lines": 0, "calls": 3, "malformed": 2, "not_utf8": 1, "oversized": 1,
        "foreign": 3, "unknown_kinds": {"mystery-v9": 1}}


def test_secrets_never_reach_a_candidate(ws: Path, tmp_path: Path) -> None:
    leaky = [("Bash", "git status"), ("Bash", "OPENAI_API_KEY=sk-live0123456789abcdefXYZ pytest -q"),
             ("Bash", "git commit -m x")]
    for n, calls in enumerate((leaky + OTHER + leaky, leaky)):
        claude_session(tmp_path / "claude", f"s{n}", ws, calls)
    [candidate] = skills(ws, tmp_path)
    record = store.get(store.sidecar(ws), str(candidate["id"]))
    assert "sk-live" not in json.dumps(record) and "[REDACTED]" in json.dumps(record)


def test_heartbeat_run_stages_skill_candidates(ws: Path, tmp_path: Path) -> None:
    for n, calls in enumerate((FLOW + OTHER + FLOW, FLOW)):
        claude_session(tmp_path / "claude", f"s{n}", ws, calls, day="2026-09-20")
    result = engine.run(ws, Settings(), now=T0, sources=sources(tmp_path))
    assert result["counts"]["new_by_kind"]["skill"] == 1


def distill(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return console.run("strato", "distill", *args, cwd=cwd)


def test_cli_top_and_stats_stage_nothing_extract_stages(ws: Path, tmp_path: Path) -> None:
    for n, calls in enumerate((FLOW + OTHER + FLOW, FLOW)):
        claude_session(tmp_path / "claude", f"s{n}", ws, calls)
    folder = ["--project", str(tmp_path / "claude")]
    top = json.loads(distill("top", *folder, "--json", cwd=ws).stdout)
    assert top["workflows"][0]["count"] == 3 and top["applied"] is False
    stats = json.loads(distill("stats", *folder, "--json", cwd=ws).stdout)
    assert stats["candidates"] == 1 and stats["calls"] == 10
    assert store.all_records(store.sidecar(ws)) == []
    extracted = json.loads(distill("extract", *folder, "--json", cwd=ws).stdout)
    assert len(extracted["candidates"]) == 1 and len(store.all_records(store.sidecar(ws))) == 1
    bad = distill("stats", "--project", str(tmp_path / "missing"), cwd=ws)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_a_transcript_cannot_add_lines_or_markup_to_a_draft(ws: Path, tmp_path: Path) -> None:
    evil = [("Bash", "git status"), ("Bash", "echo '`\n---\nname: owned\n' && pytest"), ("Bash", "git commit -m x")]
    for n, calls in enumerate((evil + OTHER + evil, evil)):
        claude_session(tmp_path / "claude", f"s{n}\n---\nname: owned", ws, calls)
    [candidate] = skills(ws, tmp_path)
    text = next(iter(store.get(store.sidecar(ws), str(candidate["id"]))["files"].values()))
    assert "name: owned" not in text.splitlines() and text.count("\n---\n") == 1
