"""The ratchet: findings a revision did not have, by path and code, counted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.support.repos import commit_all, git, write_files
from tests.support.vaults import tropo_cli
from tropo.check.findings import Finding
from tropo.check.ratchet import new_since


def _f(path: str, line: int, code: str = "W220", message: str = "broken ref 'x'") -> Finding:
    return Finding(path, line, "warning", code, message)


def test_lines_may_move_and_counts_decide() -> None:
    before = [_f("a.md", 3), _f("a.md", 4)]
    assert new_since([_f("a.md", 9), _f("a.md", 10)], before) == []  # moved down: known
    third = _f("a.md", 11)
    assert new_since([_f("a.md", 9), _f("a.md", 10), third], before) == [third]
    assert new_since([_f("b.md", 3)], before) == [_f("b.md", 3)]  # another path
    assert new_since([_f("a.md", 3, code="E103")], before) == [_f("a.md", 3, code="E103")]


def test_the_finding_reported_is_the_one_with_a_new_message() -> None:
    before = [_f("a.md", 3, message="broken ref 'old'")]
    fresh = _f("a.md", 2, message="broken ref 'new'")
    assert new_since([fresh, _f("a.md", 5, message="broken ref 'old'")], before) == [fresh]


findings = st.lists(st.builds(_f, st.sampled_from(["a.md", "b.md"]), st.integers(1, 5),
                              st.sampled_from(["W220", "E103"]),
                              st.sampled_from(["m1", "m2"])), max_size=8)


@given(findings, findings)
def test_new_is_what_the_counts_add(now: list[Finding], before: list[Finding]) -> None:
    new = new_since(now, before)
    rest = iter(now)
    assert all(any(f == g for g in rest) for f in new)  # a sub-sequence of now, in order
    for key in {(f.path, f.code) for f in now}:
        count = sum((f.path, f.code) == key for f in now)
        had = sum((f.path, f.code) == key for f in before)
        assert sum((f.path, f.code) == key for f in new) == max(0, count - had)
    assert new_since(now, now) == [] and new_since(now, []) == now


def test_check_new_since_on_a_workspace_with_old_findings(repo_dir: Path) -> None:
    write_files(repo_dir, {
        "tropo.toml": '[types.note]\nfolder = "notes"\noptional = { about = "ref-list" }\n',
        "notes/old.md": "---\nabout: [ghost, ghost]\n---\n# Old\n",
        "notes/clean.md": "# Clean\n",
    })
    old = commit_all(repo_dir)
    write_files(repo_dir, {"notes/old.md": "---\nabout: [ghost, ghost, ghost]\n---\n# Old\n",
                           "notes/clean.md": "---\nabout: [nowhere]\n---\n# Clean\n"})
    proc = tropo_cli("check", "--new-since", old, "--json", cwd=repo_dir)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert [(f["path"], f["code"]) for f in out["findings"]] == [
        ("notes/clean.md", "W220"), ("notes/old.md", "W220")]  # two then, three now: one new
    assert out["new_since"] == old and out["known"] == 2
    git(repo_dir, "checkout", "-q", "notes/clean.md")
    write_files(repo_dir, {"notes/old.md": "---\n\n\nabout: [ghost, ghost]\n---\n# O\n"})
    text = tropo_cli("check", "--new-since", old, cwd=repo_dir)
    assert text.returncode == 0 and "0 error(s), 0 warning(s) new since" in text.stdout
    assert tropo_cli("check", cwd=repo_dir).returncode == 1  # without it: all findings
    bad = tropo_cli("check", "--new-since", "no-such-rev", cwd=repo_dir)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo_dir, capture_output=True,
                          text=True, check=True).stdout == " M notes/old.md\n"
