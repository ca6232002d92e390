"""Playbook rows, memory lines, and the decisions on them (apply builds a branch from trees)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from strato.heartbeat import apply, engine
from strato.proposals import store
from strato.proposals.settings import Settings
from tests.support import console
from tests.support.guard import outside_code
from tests.support.heartbeat import T0, commit_at
from tests.support.repos import git


def beat(root: Path) -> list[str]:
    return list(engine.run(root, Settings(), now=T0)["new"])


def open_of(root: Path, check: str) -> list[dict[str, Any]]:
    return [r for r in store.all_records(store.sidecar(root)) if r["check"] == check and r["status"] == "open"]


def test_a_bug_fixed_once_proposes_no_row(ws: Path) -> None:
    commit_at(ws, T0, "fix(parser): empty input crashed", {"src/parser.py": "1"})
    beat(ws)
    assert open_of(ws, "playbook") == []


def test_a_class_of_bug_fixed_twice_proposes_one_row(ws: Path) -> None:
    commit_at(ws, T0, "fix(parser): empty input crashed", {"src/parser.py": "1"})
    beat(ws)  # the first fix is remembered across runs
    commit_at(ws, T0, "fix(parser): a lone quote crashed", {"src/parser.py": "2",
                                                            "tests/test_parser.py": "t"})
    beat(ws)
    [row] = open_of(ws, "playbook")
    assert row["subject"] == "parser"
    text = row["files"]["bug-risk-playbook.md"]
    assert "| parser fixed 2 times |" in text and "tests/test_parser.py" in text
    assert len(row["evidence"]) == 2


def test_files_repeatedly_fixed_without_a_scope(ws: Path) -> None:
    commit_at(ws, T0, "Fix off-by-one in pager", {"src/pager.py": "1", "src/other.py": "x"})
    commit_at(ws, T0, "docs: explain the pager", {"src/pager.py": "1 "})
    commit_at(ws, T0, "Fix the pager again", {"src/pager.py": "2"})
    beat(ws)
    assert [r["subject"] for r in open_of(ws, "playbook")] == ["src/pager.py"]


def test_same_history_same_id_and_revision_new_evidence_new_revision(ws: Path) -> None:
    for n in (1, 2):
        commit_at(ws, T0, f"fix(io): bug {n}", {"io.py": str(n)})
    beat(ws)
    [first] = open_of(ws, "playbook")
    store.save_state(store.sidecar(ws), {})  # forget the run: recomputed from scratch
    assert beat(ws) == []
    assert open_of(ws, "playbook")[0]["revision"] == first["revision"]
    commit_at(ws, T0, "fix(io): bug 3", {"io.py": "3"})
    assert beat(ws) == [first["id"]]
    [again] = open_of(ws, "playbook")
    assert again["revision"] != first["revision"] and again["revisions"] == [first["revision"], again["revision"]]


def test_revert_proposes_a_memory_line_with_its_trail(ws: Path) -> None:
    commit_at(ws, T0, "cache the index", {"cache.py": "x"})
    git(ws, "revert", "--no-edit", "HEAD")
    beat(ws)
    [line] = open_of(ws, "memory")
    assert "cache the index" in str(line["title"]) and line["files"] == {}
    with pytest.raises(apply.Refused):
        apply.apply(ws, str(line["id"]))


def test_apply_builds_a_branch_whose_diff_is_the_proposal(ws: Path) -> None:
    for n in (1, 2):
        commit_at(ws, T0, f"fix(io): bug {n}", {"io.py": str(n)})
    beat(ws)
    (ws / "wip.txt").write_text("uncommitted")
    git(ws, "add", "wip.txt")
    before = (git(ws, "rev-parse", "HEAD"), git(ws, "status", "--porcelain"), git(ws, "diff", "--cached"))
    [row] = open_of(ws, "playbook")
    result = apply.apply(ws, str(row["id"]))
    assert (git(ws, "rev-parse", "HEAD"), git(ws, "status", "--porcelain"), git(ws, "diff", "--cached")) == before
    assert git(ws, "diff", "--name-only", f"{row['base']}", result["branch"]).split() == ["bug-risk-playbook.md"]
    assert git(ws, "show", f"{result['branch']}:bug-risk-playbook.md") == row["files"]["bug-risk-playbook.md"]
    with pytest.raises(apply.Refused):  # the branch must not exist yet
        apply.apply(ws, str(row["id"]))


def test_rejected_subject_is_not_proposed_again(ws: Path) -> None:
    commit_at(ws, T0, "orphan", {"changes/lost.md": "---\nstatus: done\n---\n# Lost\n"})
    [pid] = beat(ws)
    apply.reject(ws, pid)
    store.save_state(store.sidecar(ws), {})
    commit_at(ws, T0, "touch", {"changes/lost.md": "---\nstatus: done\n---\n# Lost again\n"})
    assert beat(ws) == [] and store.get(store.sidecar(ws), pid)["status"] == "rejected"


def strato(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return console.run("strato", "heartbeat", *args, cwd=cwd)


def test_cli_run_status_show_and_errors(ws: Path) -> None:
    commit_at(ws, T0, "orphan", {"changes/lost.md": "---\nstatus: done\n---\n# Lost\n"})
    ran = strato("run", "--json", cwd=ws)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert len(result["summary"]) <= 3 and len(result["new"]) == 1
    report = Path(result["report"]).read_text()
    assert report.splitlines()[2] == result["summary"][0]
    shown = json.loads(strato("show", result["new"][0], "--json", cwd=ws).stdout)
    assert shown["check"] == "orphan"
    status = json.loads(strato("status", "--json", cwd=ws).stdout)
    assert [p["id"] for p in status["proposals"]] == result["new"]
    for bad, code in ((("show", "nope"), 2), (("run", "--since", "no-such-rev"), 2),
                      (("apply", result["new"][0]), 1)):
        proc = strato(*bad, cwd=ws)
        assert proc.returncode == code and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert git(ws, "status", "--porcelain") == ""


def test_a_fix_subject_reaches_the_committed_playbook_as_text(ws: Path) -> None:
    """Issue 25: a subject is its author's; the playbook is committed and rendered."""
    token = "ghp_" + "Zq3x" * 9
    lure = f"fix(parser): [ok](https://evil.example) \x1b]52;c;cm0=\x07 {token}"
    commit_at(ws, T0, lure, {"src/parser.py": "1"})
    commit_at(ws, T0, "fix(parser): `x` <b>", {"src/parser.py": "2"})
    beat(ws)
    [row] = open_of(ws, "playbook")
    text = row["files"]["bug-risk-playbook.md"]
    line = text.splitlines()[-1]
    assert "\x1b" not in text and token not in text and "U+001B]52" in line
    assert "evil.example" in line and "evil.example" not in outside_code(line)
    assert "<b>" not in outside_code(line)
