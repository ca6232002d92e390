"""``create-vivary adopt``: plans by default, only adds files, first check clean."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

import templates
from create_vivary import adopt as adopt_mod
from create_vivary import journal, journal_file
from create_vivary import plan as plan_mod
from create_vivary.adopt import exclusions, guess_preset
from tests.support.cli import run_cli, run_json
from tests.support.repos import commit_all, git, write_files
from tropo.fs import rooted
from tropo.fs.rooted import UnsafePath

pytestmark = pytest.mark.usefixtures("no_heartbeat")  # the claim is a check, not the heartbeat (tests/conftest.py)

BROWNFIELD = {
    "README.md": "# My notes\n",
    ".gitignore": "*.log\n",
    "decisions/old.md": "---\nstatus: whatever\n---\n# Old decision without the fields\n",
    "notes/2024/a.md": "---\nbroken: [\n---\n# unparsable frontmatter\n",
    "notes/b.md": "# plain\n",
    "journal.md": "# journal\n",
    "src/app.py": "print('hi')\n",
}


def approved_adopt(root: Path, *args: str) -> tuple[int, dict[str, object]]:
    """Adopt as a person does: read the plan, then apply exactly that plan by its hash."""
    code, plan = run_json("create-vivary", "adopt", str(root), *args)
    assert code == 0, plan
    return run_json("create-vivary", "adopt", str(root), *args, "--yes", "--plan",
                    str(plan["plan_hash"]))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {rel: (root / rel).read_bytes() for rel in BROWNFIELD}


@pytest.fixture
def brownfield(repo_dir: Path) -> Path:
    write_files(repo_dir, BROWNFIELD)
    commit_all(repo_dir, "existing work")
    return repo_dir


def test_the_default_is_a_plan_that_writes_nothing(brownfield: Path) -> None:
    code, out = run_json("create-vivary", "adopt", str(brownfield))
    assert code == 0 and out["mode"] == "dry-run"
    assert out["preset"] == "second-brain"
    assert out["preset_reason"] == "4 Markdown note(s) vs 1 code file(s)"
    assert "README.md" in out["kept"] and "tropo.toml" in out["would_create"]
    assert out["excluded_pre_existing"] == [
        "decisions/old.md", "journal.md", "notes/2024", "notes/b.md"
    ]
    assert git(brownfield, "status", "--porcelain") == ""


def test_yes_only_adds_files_and_the_first_check_is_clean(brownfield: Path) -> None:
    before = _snapshot(brownfield)
    code, out = approved_adopt(brownfield)
    assert code == 0, out["doctor"]["errors"]
    assert out["mode"] == "applied" and out["ok"]
    assert _snapshot(brownfield) == before
    assert git(brownfield, "status", "--porcelain", "--untracked-files=no") == ""
    # the existing .gitignore does not hide private files, so they were not written
    assert not (brownfield / "USER.md").exists()
    assert any(".gitignore" in f for f in out["followups"])
    proc = run_cli("tropo", "check", "--root", str(brownfield), "--json")
    assert proc.returncode == 0 and '"findings": []' in proc.stdout


def test_next_names_only_what_is_left_to_do(brownfield: Path) -> None:
    """The private files were left out because .gitignore does not hide them: the follow-up
    is the one command that fixes it, not a hand edit that command would repeat."""
    code, out = approved_adopt(brownfield)
    assert code == 0
    ignore = [f for f in out["followups"] if ".gitignore" in f]
    assert len(ignore) == 1 and ignore[0].startswith("run `create-vivary doctor"), ignore
    command = ignore[0].split("`")[1].split()
    assert run_cli(*command).returncode == 0
    assert (brownfield / "USER.md").is_file()
    assert git(brownfield, "check-ignore", "USER.md", "MEMORY.md").split() == ["USER.md", "MEMORY.md"]
    assert "schema" not in " ".join(out["followups"])  # a fact, not a step: it is a note


def test_a_code_repository_with_a_few_markdown_files_is_coding(repo_dir: Path) -> None:
    write_files(repo_dir, {"README.md": "# tool\n", "CHANGELOG.md": "# 1.0\n", "docs/usage.md": "# use\n",
                           "pyproject.toml": "[project]\nname = 'tool'\n", "tool/main.py": "x = 1\n"})
    commit_all(repo_dir)
    code, out = run_json("create-vivary", "adopt", str(repo_dir))
    assert code == 0 and out["preset"] == "coding"
    assert out["preset_reason"] == "build manifest pyproject.toml; 1 Markdown note(s) vs 1 code file(s)"
    text = run_cli("create-vivary", "adopt", str(repo_dir)).stdout
    assert f"adopt {repo_dir} as coding (build manifest pyproject.toml;" in text


def test_a_folder_inside_a_repository_adopts_that_repository(repo_dir: Path) -> None:
    """No nested ``git init``: the enclosing repository is adopted, and the plan says so."""
    write_files(repo_dir, {"app.py": "x = 1\n", "sub/notes.md": "# notes\n"})
    commit_all(repo_dir)
    sub = repo_dir / "sub"
    code, plan = run_json("create-vivary", "adopt", str(sub))
    assert code == 0 and plan["root"] == str(repo_dir) and plan["target"] == str(sub)
    assert plan["git_init"] is False and str(sub) in plan["repository"]
    text = run_cli("create-vivary", "adopt", str(sub)).stdout
    assert f"repository: {repo_dir} (the repository that holds {sub})" in text
    code, out = approved_adopt(sub)
    assert code == 0, out
    assert not (sub / ".git").exists() and (repo_dir / "tropo.toml").is_file()
    git(repo_dir, "add", "-A")
    assert "sub/notes.md" in git(repo_dir, "ls-files")


def test_a_plain_folder_is_made_a_repository(tmp_path: Path) -> None:
    (tmp_path / "code.py").write_text("x = 1\n")
    code, out = approved_adopt(tmp_path)
    assert code == 0 and out["git_init"] is True and out["preset"] == "coding"
    assert (tmp_path / ".git").is_dir() and (tmp_path / "USER.md").is_file()
    assert git(tmp_path, "check-ignore", "USER.md").strip() == "USER.md"


def test_an_existing_schema_is_kept(ws_with_schema: Path) -> None:
    code, out = run_json("create-vivary", "adopt", str(ws_with_schema), "--preset", "writing")
    assert code == 0
    assert out["preset_reason"] == "given with --preset"
    assert "tropo.toml" not in out["would_create"]
    assert not any(p.startswith("changes/") for p in out["would_create"])
    assert "AGENTS.md" not in out["would_create"]  # the schema would read it: a new node
    assert ".gitignore" in out["would_create"]
    left_out = [n for n in out["notes"] if n.startswith("left out what the schema would read")]
    assert len(left_out) == 1 and " AGENTS.md," in left_out[0], out["notes"]


@pytest.fixture
def ws_with_schema(repo_dir: Path) -> Path:
    write_files(repo_dir, {"tropo.toml": "version = 1\n", "n.md": "# n\n"})
    return repo_dir


def test_a_missing_folder_or_a_file_is_refused(tmp_path: Path) -> None:
    proc = run_cli("create-vivary", "adopt", str(tmp_path / "nope"), "--yes")
    assert proc.returncode == 1 and "not an existing directory" in proc.stderr
    assert not (tmp_path / "nope").exists()
    (tmp_path / "afile").write_text("x\n")
    for extra in ([], ["--recover", "sha256:" + "0" * 64]):
        proc = run_cli("create-vivary", "adopt", str(tmp_path / "afile"), *extra)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert (tmp_path / "afile").read_text() == "x\n"


def test_preset_guess() -> None:
    assert guess_preset([]) == ("coding", "empty folder")
    assert guess_preset(["a.md", "b.py"])[0] == "coding"
    assert guess_preset(["a.md", "b.md", "c.go"])[0] == "second-brain"


def test_exclusions_are_path_precise() -> None:
    got = exclusions(
        ["a/b/c/d.md", "a/e.md", "modules/x/index.md", "top.md", ".claude/s.md", "x.txt"],
        scaffold={"README.md"},
    )
    assert got == ["a/b", "a/e.md", "modules/x/index.md", "top.md"]


def test_a_clone_of_this_project_can_be_adopted(tmp_path: Path) -> None:
    """Our own templates hold a ``tropo.toml`` with placeholders; adopted, the folder is
    excluded and its configs are not read, so the first check is clean."""
    clone = tmp_path / "vivary"
    git(tmp_path, "clone", "-q", str(Path(templates.__file__).resolve().parent.parent), str(clone))
    assert "{{" in (clone / "templates/base/tropo.toml").read_text()
    code, out = approved_adopt(clone)
    assert code == 0, out
    proc = run_cli("tropo", "check", "--root", str(clone), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_adopt_takes_the_preset_the_workspace_declares(repo_dir: Path) -> None:
    """A 0.4 workspace says `preset = "coding"`; its Markdown must not outvote that."""
    write_files(repo_dir, {
        ".vivary/workspace.toml": '[workspace]\ncontract = "thin-v0.3"\npreset = "coding"\n',
        **{f"notes/n{i}.md": "# note\n" for i in range(5)},
    })
    commit_all(repo_dir)
    code, out = run_json("create-vivary", "adopt", str(repo_dir))
    assert code == 0
    assert (out["preset"], out["preset_reason"]) == ("coding", "declared in .vivary/workspace.toml")
    (repo_dir / ".vivary/workspace.toml").unlink()
    (repo_dir / "README.md").write_text("# Notes\n\nPreset: writing\n")
    _, out = run_json("create-vivary", "adopt", str(repo_dir))
    assert (out["preset"], out["preset_reason"]) == ("writing", "declared in README.md")

MESSY = {
    "tropo.toml": 'version = 1\n[types.note]\nfolder = "notes"\noptional = { about = "ref-list" }\n',
    "notes/old.md": "---\nabout: [ghost]\n---\n# Old\n",
    "notes/older.md": "---\nabout: [ghost]\n---\n# Older\n",
    "notes/clean.md": "# Clean\n\nfirst line\n",
}


def test_existing_findings_are_counted_and_the_ratchet_is_offered(repo_dir: Path) -> None:
    write_files(repo_dir, MESSY)
    commit_all(repo_dir, "a schema with old findings")
    code, out = run_json("create-vivary", "adopt", str(repo_dir))
    assert code == 0 and out["existing_findings"] == 2 and out["ratchet"] is False
    assert any("--ratchet" in f for f in out["followups"])
    assert ".vivary/hooks.toml" not in out["would_create"]
    code, out = approved_adopt(repo_dir, "--ratchet")
    assert out["ratchet"] is True and ".vivary/hooks.toml" in out["created"]
    assert 'mode = "ratchet"' in (repo_dir / ".vivary/hooks.toml").read_text()
    assert run_cli("vivary", "hooks", "install", "--root", str(repo_dir)).returncode == 0
    git(repo_dir, "add", "-A")
    git(repo_dir, "commit", "-q", "--no-verify", "-m", "adopt, ratchet")  # as the follow-up says
    (repo_dir / "notes/clean.md").write_text("# Clean\n\nfirst line, edited\n")
    git(repo_dir, "add", "notes/clean.md")
    assert git(repo_dir, "commit", "-q", "-m", "one-line edit", check=False) == ""
    assert "one-line edit" in git(repo_dir, "log", "-1", "--format=%s")
    (repo_dir / "notes/clean.md").write_text("---\nabout: [nowhere]\n---\n# Clean\n")
    git(repo_dir, "add", "notes/clean.md")
    git(repo_dir, "commit", "-q", "-m", "a new broken ref", check=False)
    assert "one-line edit" in git(repo_dir, "log", "-1", "--format=%s")  # refused


RAW_SCHEMA = {  # a user's schema that reads every Markdown file, dot-folders and templates too
    "tropo.toml": 'version = 1\n[types.note]\nfolder = "notes"\noptional = { about = "ref-list" }\n',
    "notes/old.md": "---\nabout: [ghost]\n---\n# Old\n",
    "notes/clean.md": "# Clean\n",
}


def _findings(root: Path) -> set[tuple[str, str, str]]:
    proc = run_cli("tropo", "check", "--root", str(root), "--json")
    return {(f["path"], f["code"], f["message"]) for f in json.loads(proc.stdout)["findings"]}


def test_a_ratchet_adoption_adds_no_finding_and_tolerates_the_old(repo_dir: Path) -> None:
    """The scaffold's SKILL.md files and templates/AGENTS.md would be duplicate ids under
    this schema: adopt leaves out what the schema reads, and exits 0 listing the old."""
    write_files(repo_dir, RAW_SCHEMA)
    commit_all(repo_dir, "a schema with an old finding")
    before = _findings(repo_dir)
    code, out = approved_adopt(repo_dir, "--ratchet")
    assert code == 0, out["doctor"]["errors"]
    assert _findings(repo_dir) <= before
    assert "templates/AGENTS.md" not in out["created"]
    assert not any(p.startswith(".agents/") and p.endswith(".md") for p in out["created"])
    assert out["doctor"]["errors"] == []
    assert out["doctor"]["tolerated"] == ["graph: notes/old.md:2: W220 field 'about': ref 'ghost' "
                                          "matches no document id"]
    proc = run_cli("create-vivary", "doctor", str(repo_dir))
    assert proc.returncode == 0 and "tolerated: graph: notes/old.md:2: W220" in proc.stdout


def test_a_clean_schema_gets_no_offer(ws_with_schema: Path) -> None:
    code, out = run_json("create-vivary", "adopt", str(ws_with_schema))
    assert code == 0 and out["existing_findings"] == 0
    assert not any("--ratchet" in f for f in out["followups"])


def test_apply_needs_the_hash_of_the_plan_and_refuses_once_the_tree_changed(brownfield: Path) -> None:
    code, plan = run_json("create-vivary", "adopt", str(brownfield))
    assert code == 0
    before = sorted(p.relative_to(brownfield).as_posix() for p in brownfield.rglob("*")
                    if ".git" not in p.parts)
    without = run_cli("create-vivary", "adopt", str(brownfield), "--yes")
    assert without.returncode == 1 and "requires --plan" in without.stderr
    wrong = run_cli("create-vivary", "adopt", str(brownfield), "--yes", "--plan", "sha256:" + "0" * 64)
    assert wrong.returncode == 1 and "plan hash mismatch" in wrong.stderr
    (brownfield / "notes" / "b.md").write_text("# plain, edited after the review\n")
    changed = run_cli("create-vivary", "adopt", str(brownfield), "--yes", "--plan", plan["plan_hash"])
    assert changed.returncode == 1 and changed.stderr.count("\n") == 1
    assert "the tree changed since the plan" in changed.stderr
    after = sorted(p.relative_to(brownfield).as_posix() for p in brownfield.rglob("*")
                   if ".git" not in p.parts)
    assert after == before


def _crash_after(count: int) -> Callable[..., Path]:
    """A write_within that dies (as a kill would: no handler runs) after ``count`` writes."""
    real = rooted.write_within
    done: list[str] = []

    def write(root: Path, rel: str, data: bytes, mode: int = 0o644) -> Path:
        if rel != journal_file.PATH and len(done) == count:
            raise KeyboardInterrupt("power cut")
        path = real(root, rel, data, mode)
        if rel != journal_file.PATH:
            done.append(rel)
        return path

    return write


def test_an_interrupted_adopt_is_recovered_by_its_hash(
    brownfield: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    existing = _snapshot(brownfield)
    p = adopt_mod.plan(brownfield, None, "ws")
    monkeypatch.setattr(plan_mod, "write_within", _crash_after(3))
    with pytest.raises(KeyboardInterrupt):
        adopt_mod.apply(p, p.hash)
    monkeypatch.undo()
    assert (brownfield / journal_file.PATH).is_file()
    again = run_cli("create-vivary", "adopt", str(brownfield), "--yes", "--plan", p.hash)
    assert again.returncode == 1 and "unfinished adoption journal" in again.stderr
    code, dry = run_json("create-vivary", "adopt", str(brownfield), "--recover", p.hash)
    assert code == 0 and dry["mode"] == "recovery-dry-run"
    ops = [r["operation"] for r in dry["recovery_actions"]]
    assert ops.count("delete-created") == 3 and set(ops) == {"delete-created", "no-op"}
    assert (brownfield / journal_file.PATH).is_file()  # the dry run wrote nothing
    other = run_cli("create-vivary", "adopt", str(brownfield), "--recover", "sha256:" + "1" * 64)
    assert other.returncode == 1 and "journal is for plan" in other.stderr
    bad = run_cli("create-vivary", "adopt", str(brownfield), "--recover", p.hash, "--yes",
                  "--plan", p.hash)
    assert bad.returncode == 1 and "recovery plan hash mismatch" in bad.stderr
    code, done = run_json("create-vivary", "adopt", str(brownfield), "--recover", p.hash, "--yes",
                          "--plan", dry["recovery_plan_hash"])
    assert code == 0 and done["mode"] == "recovered"
    assert not (brownfield / ".vivary").exists()
    assert _snapshot(brownfield) == existing
    assert sorted(p.relative_to(brownfield).as_posix() for p in brownfield.rglob("*")
                  if p.is_file() and ".git" not in p.parts) == sorted(BROWNFIELD)


def test_an_interrupted_adopt_of_a_folder_inside_a_repository_is_recovered_from_that_folder(
    repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal is the enclosing repository's, where the files went: `--recover` given
    the folder that was asked for finds it."""
    write_files(repo_dir, {"app.py": "x = 1\n", "sub/notes.md": "# notes\n"})
    commit_all(repo_dir)
    p = adopt_mod.plan(repo_dir / "sub", None, "ws")
    monkeypatch.setattr(plan_mod, "write_within", _crash_after(2))
    with pytest.raises(KeyboardInterrupt):
        adopt_mod.apply(p, p.hash)
    monkeypatch.undo()
    code, dry = run_json("create-vivary", "adopt", str(repo_dir / "sub"), "--recover", p.hash)
    assert code == 0 and dry["root"] == str(repo_dir), dry
    code, done = run_json("create-vivary", "adopt", str(repo_dir / "sub"), "--recover", p.hash,
                          "--yes", "--plan", dry["recovery_plan_hash"])
    assert code == 0 and done["mode"] == "recovered"
    assert git(repo_dir, "status", "--porcelain") == ""


def test_recovery_never_deletes_a_file_edited_after_the_crash(
    brownfield: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = adopt_mod.plan(brownfield, None, "ws")
    monkeypatch.setattr(plan_mod, "write_within", _crash_after(2))
    with pytest.raises(KeyboardInterrupt):
        adopt_mod.apply(p, p.hash)
    monkeypatch.undo()
    first = next(f.path for f in p.files if f.action == "create")
    (brownfield / first).write_text("a person wrote here after the crash\n")
    proc = run_cli("create-vivary", "adopt", str(brownfield), "--recover", p.hash)
    assert proc.returncode == 1 and f"recovery destination changed: {first}" in proc.stderr
    assert (brownfield / first).read_text() == "a person wrote here after the crash\n"


def test_recovery_refuses_a_folder_where_adopt_wrote_a_file(
    brownfield: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What stands where adopt created a file is judged the way --minimal's recovery
    judges it: a folder there is refused in one line, and nothing in it is touched."""
    p = adopt_mod.plan(brownfield, None, "ws")
    monkeypatch.setattr(plan_mod, "write_within", _crash_after(2))
    with pytest.raises(KeyboardInterrupt):
        adopt_mod.apply(p, p.hash)
    monkeypatch.undo()
    first = next(f.path for f in p.files if f.action == "create")
    (brownfield / first).unlink()
    (brownfield / first).mkdir()
    (brownfield / first / "mine.txt").write_text("mine\n")
    proc = run_cli("create-vivary", "adopt", str(brownfield), "--recover", p.hash)
    assert proc.returncode == 1 and proc.stderr.strip() == f"create-vivary: not a regular file: {first}"
    assert (brownfield / first / "mine.txt").read_text() == "mine\n"


def test_a_failed_write_takes_back_what_adopt_wrote(brownfield: Path) -> None:
    """A real failure mid-adopt: a planned folder turns into a file between plan and apply."""
    code, plan = run_json("create-vivary", "adopt", str(brownfield))
    p = adopt_mod.plan(brownfield, None, "ws")
    late = sorted({f.path.split("/")[0] for f in p.files if f.action == "create" and "/" in f.path})[-1]
    existing = _snapshot(brownfield)
    with pytest.raises(UnsafePath):
        (brownfield / late).write_text("in the way\n")
        adopt_mod.apply(p, p.hash)
    (brownfield / late).unlink()
    assert _snapshot(brownfield) == existing
    assert not (brownfield / journal_file.PATH).exists()
    assert sorted(q.relative_to(brownfield).as_posix() for q in brownfield.rglob("*")
                  if q.is_file() and ".git" not in q.parts) == sorted(BROWNFIELD)
    assert code == 0 and plan["plan_hash"] == p.hash


def test_a_planted_journal_cannot_make_recovery_delete_the_users_files(brownfield: Path) -> None:
    """The journal is a file in the tree, so whoever wrote the tree chose its bytes: a
    journal naming the user's README (with the right digest) or a path outside is refused."""
    readme = (brownfield / "README.md").read_bytes()
    for path in ("README.md", "../outside.md", "src/app.py"):
        body = {"schema": journal.SCHEMA, "plan_hash": "sha256:" + "a" * 64, "git_init": False,
                "created": [{"path": path, "after_hash": "sha256:" + hashlib.sha256(readme).hexdigest()}]}
        (brownfield / ".vivary/runtime").mkdir(parents=True, exist_ok=True)
        (brownfield / journal_file.PATH).write_text(json.dumps(body))
        proc = run_cli("create-vivary", "adopt", str(brownfield), "--recover", body["plan_hash"])
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, (path, proc.stderr)
        assert "never writes" in proc.stderr or "git tracks" in proc.stderr, (path, proc.stderr)
    assert (brownfield / "README.md").read_bytes() == readme
