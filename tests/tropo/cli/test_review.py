"""tropo diff / plan / log on real repositories: graph deltas between revisions, the
what-if of a change spec (side by side with vivary-tropo), and a node's history."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.guard import outside_code
from tests.support.repos import commit_all, git, write_files
from tests.support.vaults import make_vault, tropo, tropo_cli, tropo_json


@pytest.fixture
def vault(repo_dir: Path) -> Path:
    make_vault(repo_dir)
    commit_all(repo_dir, "seed")
    return repo_dir


def _change_vault(root: Path) -> None:
    """Remove a project others ref, retype a person, edit a field, add a broken ref."""
    git(root, "rm", "-q", "-r", "projects/tropo/README.md")
    write_files(root, {
        "projects/tropo/decisions/0001-folder-as-type.md":
            "---\nstatus: superseded\ndate: 2026-06-12\nrelated: [nobody]\n---\n# Folder as type\n",
        "contacts/ann.md": "---\nrelationship: colleague\n---\n# Ann\n",
    })
    commit_all(root, "change")


def test_diff_between_commits(vault: Path) -> None:
    _change_vault(vault)
    code, out = tropo_json("diff", "HEAD~1..HEAD", cwd=vault)
    assert code == 0
    d = out["delta"]
    assert d["nodes_added"] == ["ann"] and d["nodes_removed"] == ["tropo"]
    assert {"id": "0001-folder-as-type", "field": "status", "from": "accepted", "to": "superseded"} \
        in d["fields_changed"]
    assert {"id": "0001-folder-as-type", "field": "related", "from": None, "to": ["nobody"]} \
        in d["fields_changed"]
    assert d["edges_newly_broken"] == [
        {"from": "2026-06-12-kickoff", "field": "project", "to": "tropo", "broken": True}]
    assert out["broken_added"] == [
        {"from": "0001-folder-as-type", "field": "related", "to": "nobody", "broken": True}]
    assert d["edges_removed"] == [{"from": "tropo", "field": "owner", "to": "jeff", "broken": False}]
    # The removed project's dependents are read from the old graph.
    assert out["blast"]["tropo"] == {
        "count": 1, "nearest": [{"id": "2026-06-12-kickoff", "distance": 1, "via": "project"}]}
    _, limited = tropo_json("diff", "HEAD~1..HEAD", "--blast-limit", "0", cwd=vault)
    assert limited["blast"]["tropo"] == {"count": 1, "nearest": []}
    assert out["counts"]["edges_newly_broken"] == 1 and out["counts"]["broken_added"] == 1
    proc = tropo_cli("diff", "HEAD~1..HEAD", "--fail-on", "broken", cwd=vault)
    assert proc.returncode == 1 and "BROKEN 2026-06-12-kickoff --project--> tropo" in proc.stdout
    code, md, _ = tropo("diff", "HEAD~1..HEAD", "--markdown", cwd=vault)
    assert code == 0 and md.startswith("### Graph diff `HEAD~1..HEAD`")
    assert "This change breaks refs" in md and "| refs newly broken | 2 |" in md
    assert "` 2026-06-12-kickoff --project--> tropo `" in md


def test_diff_retype_move_and_clean_change(vault: Path) -> None:
    (vault / "contacts").mkdir()
    git(vault, "mv", "people/jeff.md", "contacts/jeff.md")  # same type through the alias
    write_files(vault, {"meetings/standup.md": "---\ndate: 2026-07-01\n---\n# Standup\n"})
    commit_all(vault, "move")
    code, out = tropo_json("diff", "HEAD~1..HEAD", "--fail-on", "broken", cwd=vault)
    assert code == 0
    assert out["delta"]["nodes_moved"] == [{"id": "jeff", "from": "people/jeff.md", "to": "contacts/jeff.md"}]
    assert out["delta"]["nodes_retyped"] == [] and out["delta"]["nodes_added"] == ["standup"]
    git(vault, "mv", "meetings/standup.md", "people/standup.md")
    code, out = tropo_json("diff", "--staged", cwd=vault)
    assert out["delta"]["nodes_retyped"] == [{"id": "standup", "from": "meeting", "to": "person"}]
    assert (out["base"], out["head"]) == ("HEAD", "index")
    # A alone: against the working tree, where an unstaged edit shows up.
    write_files(vault, {"people/jeff2.md": "---\nrelationship: self\n---\n"})
    _, out = tropo_json("diff", "HEAD", cwd=vault)
    assert "jeff2" in out["delta"]["nodes_added"]


def test_diff_cached_states_equal_fresh(vault: Path) -> None:
    _change_vault(vault)
    _, warm1 = tropo_json("diff", "HEAD~1..HEAD", cwd=vault)
    assert len(list((vault / ".git" / "vivary").glob("states.v*/*"))) == 2  # a tree state per side
    _, warm2 = tropo_json("diff", "HEAD~1..HEAD", cwd=vault)
    _, fresh = tropo_json("diff", "HEAD~1..HEAD", "--no-cache", cwd=vault)
    assert warm1 == warm2 == fresh


def test_diff_bad_input(vault: Path, tmp_path: Path) -> None:
    for args in (["no-such..HEAD"], ["HEAD..no-such"], [], ["HEAD...HEAD"], ["..HEAD"],
                 ["HEAD..HEAD", "--staged"]):
        proc = tropo_cli("diff", *args, cwd=vault)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    # One side without a config: the revision before the workspace was adopted.
    other = tmp_path / "late"
    other.mkdir()
    git(other, "init", "-q")
    write_files(other, {"README.md": "# not yet\n"})
    commit_all(other, "before")
    make_vault(other)
    commit_all(other, "adopt")
    proc = tropo_cli("diff", "HEAD~1..HEAD", cwd=other)
    assert proc.returncode == 2 and "no tropo.toml in HEAD~1" in proc.stderr


PLAN = """\
remove = ["tropo"]
retype = { jeff = "project", nobody = "x" }
break = [{ from = "2026-06-12-kickoff", to = "jeff" }]
add = [{ from = "jeff", field = "owner", to = "missing" }, { from = "jeff", to = "2026-06-12-kickoff" }]
"""


def test_plan_matches_upstream(vault: Path, upstream: Callable[[str], Path]) -> None:
    exe = upstream("tropo")
    write_files(vault, {"plan.toml": PLAN})
    spec = str(vault / "plan.toml")
    code, ours = tropo_json("plan", spec, cwd=vault)
    proc = subprocess.run([str(exe), "plan", spec, "--json"], cwd=vault, capture_output=True,
                          text=True, check=False)
    assert (code, ours) == (proc.returncode, json.loads(proc.stdout))


def test_plan_reports_without_writing(vault: Path) -> None:
    write_files(vault, {"plan.toml": PLAN})
    before = git(vault, "status", "--porcelain")
    code, out = tropo_json("plan", str(vault / "plan.toml"), cwd=vault)
    assert code == 1 and out["problems"] == 2
    assert out["unknown_targets"] == ["nobody"]
    assert out["affected"] == {"2026-06-12-kickoff": ["jeff", "tropo"]}
    assert git(vault, "status", "--porcelain") == before
    write_files(vault, {"ok.toml": 'retype = { jeff = "person" }\n'})
    code, out = tropo_json("plan", str(vault / "ok.toml"), cwd=vault)
    assert code == 0 and out["problems"] == 0 and out["delta"]["nodes_retyped"] == []


@pytest.mark.parametrize("text", ["remove = 3\n", "oops = []\n", "add = [{ from = \"a\" }]\n",
                                  "retype = { a = 1 }\n", "not toml ][\n"])
def test_plan_bad_spec(vault: Path, text: str) -> None:
    write_files(vault, {"bad.toml": text})
    proc = tropo_cli("plan", "bad.toml", cwd=vault)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.startswith("tropo: plan:")
    assert tropo_cli("plan", "missing.toml", cwd=vault).returncode == 2


def test_log_follows_fields_and_renames(vault: Path) -> None:
    path = "projects/tropo/decisions/0001-folder-as-type.md"
    write_files(vault, {path: "---\nstatus: superseded\ndate: 2026-06-12\n---\n# Folder as type\n"})
    commit_all(vault, "supersede")
    git(vault, "mv", path, "projects/tropo/decisions/folder-as-type.md")
    commit_all(vault, "rename")
    write_files(vault, {"people/jeff.md": "---\nrelationship: me\n---\n# Jeff\n"})
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=Other Person", "commit", "-q", "-m", "unrelated",
        "--author", "Other Person <o@example.com>")
    code, out = tropo_json("log", "folder-as-type", cwd=vault)
    assert code == 0
    kinds = [(e["kind"], e["summary"]) for e in out["events"]]
    assert kinds == [("added", "seed"), ("changed", "supersede"), ("renamed", "rename")]
    added, changed, renamed = out["events"]
    assert {"field": "status", "from": None, "to": "accepted"} in added["changes"]
    assert changed["changes"] == [{"field": "status", "from": "accepted", "to": "superseded"}]
    assert changed["author"] == "Test Author" and len(changed["commit"]) == 40
    assert renamed["from_path"] == path and renamed["changes"] == []
    _, jeff = tropo_json("log", "jeff", cwd=vault)
    assert jeff["events"][-1]["author"] == "Other Person"
    assert jeff["events"][-1]["changes"] == [{"field": "relationship", "from": "self", "to": "me"}]


def test_log_bad_input(vault: Path) -> None:
    proc = tropo_cli("log", "no-such-id", cwd=vault)
    assert proc.returncode == 1 and "no document with id 'no-such-id'" in proc.stderr
    proc = tropo_cli("log", "jeff", "--rev", "nope", cwd=vault)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


LURE = "x` [click](https://evil.example) \\e[2K\\u034f"  # YAML escapes: ESC, a combining grapheme joiner


def test_what_a_document_or_commit_says_is_shown_not_obeyed(vault: Path) -> None:
    """Issue 25: a field value, a ref target, a commit's author and subject are their
    authors' bytes. The PR comment keeps them in code spans (no link escapes one), and the
    terminal shows escape sequences and invisible characters as U+XXXX."""
    write_files(vault, {"projects/tropo/decisions/0001-folder-as-type.md":
                        f'---\nstatus: "{LURE}"\ndate: 2026-06-12\nrelated: ["\\e]52;c;cm0=\\a"]\n---\n# F\n\n'
                        "Folders \x1b]52;c;cm0=\x07 as types.\n"})
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=Ev\x1b[2Kil", "commit", "-q", "-m", "change \x1b]52;c;x\x07")
    md = tropo_cli("diff", "HEAD~1..HEAD", "--markdown", cwd=vault).stdout
    assert "evil.example" in md and "evil.example" not in outside_code(md)
    for args in (("diff", "HEAD~1..HEAD", "--markdown"), ("diff", "HEAD~1..HEAD"), ("graph",),
                 ("log", "0001-folder-as-type"), ("check",), ("query", "folders"), ("find", "folders")):
        out = tropo_cli(*args, cwd=vault).stdout
        assert not [c for c in "\x1b\x07\u034f" if c in out], (args, out)
        assert "U+001B" in out or "\\x1b" in out, (args, out)
