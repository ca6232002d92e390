"""Working tree, index and revision give one answer for the same bytes; the cache is
disposable; history dates come from git."""

from __future__ import annotations

import json
import marshal
from pathlib import Path

import pytest

from tests.support.repos import commit_all, git, write_files
from tests.support.vaults import codes, drop_answers, make_vault, tropo, tropo_json
from tropo.check import frontmatter
from tropo.check.workspace import Source, Workspace, open_workspace
from tropo.git.snapshot import Entry

BROKEN = "---\ndate: 2026-01-01\nattendees: [ghost]\n---\n"


def test_three_sources_one_answer(repo_dir: Path) -> None:
    make_vault(repo_dir, {"meetings/broken.md": BROKEN})
    commit_all(repo_dir)
    answers = [tropo_json("check", *flag, cwd=repo_dir)[1] for flag in ([], ["--staged"], ["--rev", "HEAD"])]
    assert answers[0] == answers[1] == answers[2]
    assert codes(answers[0]) == [("meetings/broken.md", 3, "W220")]


def test_staged_checks_the_index_not_the_working_tree(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    target = repo_dir / "meetings" / "2026-06-12-kickoff.md"
    target.write_text(BROKEN)
    git(repo_dir, "add", str(target))
    target.write_text("---\ndate: 2026-01-01\n---\n# fixed in the tree only\n")
    assert tropo_json("check", cwd=repo_dir)[0] == 0
    code, out = tropo_json("check", "--staged", cwd=repo_dir)
    assert code == 1 and codes(out) == [("meetings/2026-06-12-kickoff.md", 3, "W220")]
    # An untracked broken file is in the working tree but not in the index.
    write_files(repo_dir, {"meetings/new.md": BROKEN})
    assert tropo_json("check", "--staged", cwd=repo_dir)[1]["checked"] == 4
    assert tropo_json("check", cwd=repo_dir)[1]["checked"] == 5


def test_rev_reads_an_old_commit_with_its_own_config(repo_dir: Path) -> None:
    make_vault(repo_dir, {"meetings/broken.md": BROKEN})
    first = commit_all(repo_dir, "first")
    (repo_dir / "meetings" / "broken.md").unlink()
    (repo_dir / "tropo.toml").write_text((repo_dir / "tropo.toml").read_text() + "\n[types.extra]\n")
    commit_all(repo_dir, "second")
    assert tropo_json("check", cwd=repo_dir)[0] == 0
    code, out = tropo_json("check", "--rev", first[:10], cwd=repo_dir)
    assert code == 1 and out["checked"] == 5
    _, types = tropo_json("types", "--rev", first, cwd=repo_dir)
    assert "extra" not in types["types"]
    assert "extra" in tropo_json("types", cwd=repo_dir)[1]["types"]


def test_deleted_and_ignored_files(repo_dir: Path) -> None:
    make_vault(repo_dir, {"people/gone.md": "---\nrelationship: x\n---\n",
                          "people/private.md": BROKEN, ".gitignore": "people/private.md\n"})
    commit_all(repo_dir)
    (repo_dir / "people" / "gone.md").unlink()
    code, out = tropo_json("check", cwd=repo_dir)
    assert (code, out["checked"]) == (0, 4)


def test_workspace_in_a_subfolder_of_the_repo(repo_dir: Path) -> None:
    make_vault(repo_dir / "kb")
    write_files(repo_dir, {"outside.md": "---\n- not a node\n---\n"})
    commit_all(repo_dir)
    for flags in ([], ["--staged"], ["--rev", "HEAD"]):
        code, out = tropo_json("check", *flags, cwd=repo_dir / "kb")
        assert (code, out["checked"]) == (0, 4), flags


def test_errors_of_sources(tmp_path: Path, repo_dir: Path) -> None:
    make_vault(tmp_path / "plain")
    assert tropo_json("check", cwd=tmp_path / "plain")[0] == 0  # no git: still works
    code, _, err = tropo("check", "--staged", cwd=tmp_path / "plain")
    assert code == 2 and "needs a git work tree" in err
    code, _, err = tropo("check", "--rev", "HEAD", cwd=tmp_path / "plain")
    assert code == 2 and "needs a git work tree" in err
    make_vault(repo_dir)
    code, _, err = tropo("check", "--rev", "HEAD", cwd=repo_dir)
    assert code == 2 and "no commits yet" in err
    git(repo_dir, "add", "-A")
    assert tropo_json("check", "--staged", cwd=repo_dir)[0] == 0  # index before first commit
    commit_all(repo_dir)
    code, _, err = tropo("check", "--rev", "no-such-rev", cwd=repo_dir)
    assert code == 2 and "names no commit" in err
    code, _, err = tropo("check", "--rev", "--all", cwd=repo_dir)
    assert code == 2
    code, _, err = tropo("check", "--staged", "--rev", "HEAD", cwd=repo_dir)
    assert code == 2 and "exclude each other" in err


def test_merge_conflict_in_the_index_is_e000(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    git(repo_dir, "checkout", "-q", "-b", "other")
    (repo_dir / "people/jeff.md").write_text("---\nrelationship: other\n---\n")
    commit_all(repo_dir)
    git(repo_dir, "checkout", "-q", "main")
    (repo_dir / "people/jeff.md").write_text("---\nrelationship: main\n---\n")
    commit_all(repo_dir)
    git(repo_dir, "merge", "other", check=False)
    code, out = tropo_json("check", "--staged", cwd=repo_dir)
    assert code == 1 and ("people/jeff.md", 0, "E000") in codes(out)


def _cache_file(repo: Path, name: str = "parse") -> Path:
    return next((repo / ".git" / "vivary").glob(f"{name}.v*"))


def test_parse_cache_is_keyed_by_blob_and_disposable(repo_dir: Path) -> None:
    make_vault(repo_dir, {"meetings/broken.md": BROKEN})
    commit_all(repo_dir)
    first = tropo_json("check", cwd=repo_dir)[1]
    cache = marshal.loads(_cache_file(repo_dir).read_bytes())
    blob = git(repo_dir, "rev-parse", "HEAD:meetings/broken.md").strip()
    assert blob in cache and len(cache) == 5
    for name in ("parse", "docs"):  # parse cache, memo of analyses
        _cache_file(repo_dir, name).write_bytes(b"garbage \x00\xff")
    for name in ("results", "states"):  # whole results, tree states: a file each
        for path in _cache_file(repo_dir, name).iterdir():
            path.write_bytes(b"garbage \x00\xff")
    assert tropo_json("check", cwd=repo_dir)[1] == first
    assert blob in marshal.loads(_cache_file(repo_dir).read_bytes())  # rebuilt
    _cache_file(repo_dir).unlink()
    assert tropo_json("check", "--no-cache", cwd=repo_dir)[1] == first
    assert not list((repo_dir / ".git" / "vivary").glob("parse.v*"))  # --no-cache writes nothing
    assert tropo_json("check", "--staged", cwd=repo_dir)[1] == first
    assert tropo_json("check", "--rev", "HEAD", cwd=repo_dir)[1] == first


def test_cache_entry_is_read_instead_of_the_blob(repo_dir: Path) -> None:
    """Prove the warm path uses the cache: poison one entry and watch the answer follow."""
    make_vault(repo_dir)
    commit_all(repo_dir)
    tropo_json("check", cwd=repo_dir)
    path = _cache_file(repo_dir)
    cache = marshal.loads(path.read_bytes())
    blob = git(repo_dir, "rev-parse", "HEAD:people/jeff.md").strip()
    _fields, _lines, title, error, flags = cache[blob]
    cache[blob] = ({}, {}, title, error, flags)  # as if jeff.md had no relationship
    path.write_bytes(marshal.dumps(cache))
    _cache_file(repo_dir, "docs").unlink()  # else the memoized analysis answers first
    drop_answers(repo_dir)  # and before it the stored results
    assert codes(tropo_json("check", cwd=repo_dir)[1]) == [("people/jeff.md", 1, "E101")]
    assert tropo_json("check", "--no-cache", cwd=repo_dir)[0] == 0


def test_created_updated_come_from_history(repo_dir: Path) -> None:
    make_vault(repo_dir)
    env_date = "2024-03-05T12:00:00+00:00"
    git(repo_dir, "add", "-A")
    git(repo_dir, "-c", "user.name=x", "commit", "-q", "-m", "old", "--date", env_date)
    target = repo_dir / "people" / "jeff.md"
    target.write_text("---\nrelationship: self\ncreated: 2024-03-05\nupdated: 1999-01-01\n---\n# Jeff\n")
    git(repo_dir, "add", "-A")
    git(repo_dir, "commit", "-q", "-m", "new", "--date", "2024-04-01T12:00:00+00:00")
    _code, out = tropo_json("check", "--lenient", cwd=repo_dir)
    assert codes(out) == [("people/jeff.md", 3, "W210")]  # created matches; updated does not
    ws = open_workspace(repo_dir, Source.worktree())
    assert ws.dates()["people/jeff.md"] == ("2024-03-05", "2024-04-01")


def test_graph_json_shape(repo_dir: Path) -> None:
    make_vault(repo_dir, {"meetings/broken.md": BROKEN})
    _, g = tropo_json("graph", cwd=repo_dir)
    assert g["root"] == str(repo_dir.resolve())
    assert g["counts"] == {"nodes": 5, "edges": 4, "broken": 1}
    assert [n["id"] for n in g["nodes"]] == sorted(n["id"] for n in g["nodes"])
    assert {"from": "broken", "field": "attendees", "to": "ghost", "broken": True} in g["edges"]
    assert json.dumps(g["edges"]) == json.dumps(sorted(g["edges"], key=lambda e: (e["from"], e["field"], e["to"])))


def test_symlinks_give_the_same_finding_from_every_source(repo_dir: Path, tmp_path: Path) -> None:
    import os

    make_vault(repo_dir)
    os.symlink("/etc/hostname", repo_dir / "people" / "abs.md")
    os.symlink("../../outside.md", repo_dir / "people" / "rel.md")
    os.symlink("jeff.md", repo_dir / "people" / "alias.md")
    commit_all(repo_dir)
    expected = [("people/abs.md", 0, "W230"), ("people/rel.md", 0, "W230")]
    for flags in ([], ["--staged"], ["--rev", "HEAD"]):
        code, out = tropo_json("check", *flags, cwd=repo_dir)
        assert (code, sorted(codes(out)), out["checked"]) == (1, expected, 4), flags


def test_without_caches_documents_parsed_while_status_runs_stand_only_for_the_index(
        repo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--no-cache`` parses the index's documents while ``git status`` walks the work
    tree; a parse counts only for an entry status leaves as the index has it."""
    make_vault(repo_dir, {"people/ann.md": "---\nrelationship: peer\n---\n",
                          "people/bob.md": "---\nrelationship: peer\n---\n",
                          "people/gone.md": "---\nrelationship: peer\n---\n"})
    commit_all(repo_dir)
    write_files(repo_dir, {"people/bob.md": "---\nbogus: 1\n---\n",  # modified: read again
                           "people/new.md": "---\nbogus: 1\n---\n"})  # untracked: not in the index
    (repo_dir / "people" / "gone.md").unlink()  # deleted: listed early, then dropped
    seen: list[str] = []
    planted = frontmatter.parse("---\nrelationship: planted\nplanted: 1\n---\n")
    real = Workspace._parse_early

    def spy(self: Workspace, index: list[Entry]) -> None:
        real(self, index)
        seen.extend(e.rel for e in index)
        for rel in ("people/ann.md", "people/bob.md"):  # what each would say if it counted
            self._early[rel] = (self._early[rel][0], planted, 0)

    monkeypatch.setattr(Workspace, "_parse_early", spy)
    ws = open_workspace(repo_dir, Source.worktree(), use_cache=False)
    found = {(f.path, f.code) for f in ws.check().findings}
    assert "people/gone.md" in seen and "people/new.md" not in seen
    assert ("people/ann.md", "W202") in found  # clean: the early parse stood for it
    assert {("people/bob.md", "E101"), ("people/new.md", "E101")} <= found  # the disk's bytes
    assert not any(path == "people/gone.md" for path, _ in found)
