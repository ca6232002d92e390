"""The memo of per-document analyses (``.git/vivary/docs.v*``) and the folder-at-a-time
exclude test: the two speed-ups a warm check leans on must never change an answer."""

from __future__ import annotations

import marshal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.repos import commit_all, git, write_files
from tests.support.vaults import codes, drop_answers, make_vault, tropo_json
from tropo.check.config import excluder, is_excluded
from tropo.check.workspace import walk_key
from tropo.git.snapshot import Entry


def _memo(repo: Path) -> Path:
    return next((repo / ".git" / "vivary").glob("docs.v*"))


def _keys_for(memo: dict[str, tuple[object, ...]], rel: str) -> list[str]:
    return [k for k in memo if k.split("\0")[1] == rel]


def test_warm_check_reads_the_memo_and_no_cache_ignores_it(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    assert tropo_json("check", cwd=repo_dir)[0] == 0
    memo = marshal.loads(_memo(repo_dir).read_bytes())
    (key,) = _keys_for(memo, "people/jeff.md")
    rec = list(memo[key])
    rec[5] = [("people/jeff.md", 1, "error", "E101", "planted")]
    memo[key] = tuple(rec)
    _memo(repo_dir).write_bytes(marshal.dumps(memo))
    drop_answers(repo_dir)  # else the stored results answer first
    assert codes(tropo_json("check", cwd=repo_dir)[1]) == [("people/jeff.md", 1, "E101")]
    assert tropo_json("check", "--no-cache", cwd=repo_dir)[0] == 0


def test_a_schema_change_is_never_answered_from_the_memo(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    assert tropo_json("check", cwd=repo_dir)[0] == 0
    config = repo_dir / "tropo.toml"
    config.write_text(config.read_text().replace(
        'required = { relationship = "string" }', 'required = { relationship = "string", email = "string" }'))
    code, out = tropo_json("check", cwd=repo_dir)
    assert code == 1 and codes(out) == [("people/jeff.md", 1, "E101")]


def test_same_bytes_under_another_path_are_checked_again(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    assert tropo_json("check", cwd=repo_dir)[0] == 0
    (repo_dir / "projects" / "misc").mkdir()
    git(repo_dir, "mv", "people/jeff.md", "projects/misc/jeff.md")  # now a project: no status
    for args in ([], ["--staged"]):
        code, out = tropo_json("check", *args, cwd=repo_dir)
        assert code == 1 and ("projects/misc/jeff.md", 1, "E101") in codes(out)


def test_documents_dated_from_history_are_not_memoized(repo_dir: Path) -> None:
    make_vault(repo_dir, {"people/ann.md": "---\nrelationship: peer\ncreated: 1999-01-01\n---\n# Ann\n"})
    commit_all(repo_dir)
    tropo_json("check", cwd=repo_dir)
    memo = marshal.loads(_memo(repo_dir).read_bytes())
    assert _keys_for(memo, "people/jeff.md") and not _keys_for(memo, "people/ann.md")


def test_an_edit_in_the_working_tree_is_seen_through_a_warm_memo(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    assert tropo_json("check", cwd=repo_dir)[0] == 0
    write_files(repo_dir, {"people/jeff.md": "---\nrelationship: self\nbogus: 1\n---\n# Jeff\n"})
    assert codes(tropo_json("check", cwd=repo_dir)[1]) == [("people/jeff.md", 3, "W202")]
    assert tropo_json("check", "--staged", cwd=repo_dir)[0] == 0


_name = st.sampled_from(["a", "b", ".git", "docs", "node_modules", "x.md", "README.md", "c d"])
_rel = st.lists(_name, min_size=1, max_size=4).map("/".join)
_pattern = st.one_of(_rel, _rel.map(lambda p: p + "/"), _rel.map(lambda p: p + "/**"),
                     _rel.map(lambda p: p.replace("/", "\\")), st.just("/"), st.just(""))


@settings(max_examples=1000)
@given(st.lists(_pattern, max_size=5), st.lists(_rel, max_size=12))
def test_excluder_decides_like_is_excluded(patterns: list[str], paths: list[str]) -> None:
    test = excluder(patterns)
    for rel in paths:
        assert test(rel) == is_excluded(rel, patterns), rel


@given(st.lists(_rel, max_size=20, unique=True))
def test_walk_key_sorts_as_os_walk_does(paths: list[str]) -> None:
    """A folder's files (sorted) before its subfolders (sorted), recursively."""
    def reference(rel: str) -> list[tuple[int, str]]:
        parts = rel.split("/")
        return [(1, p) for p in parts[:-1]] + [(0, parts[-1])]

    entries = [Entry(p, None, 0o100644) for p in paths]
    assert sorted(entries, key=lambda e: walk_key(e.rel)) == sorted(entries, key=lambda e: reference(e.rel))
