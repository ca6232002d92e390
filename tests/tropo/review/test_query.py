"""tropo query / find: ranking as vivary-tropo ranks, the blob-keyed index, budgets, bad input."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.repos import commit_all, git, write_files
from tests.support.requirements import missing, upstream_bin
from tests.support.vaults import SEARCH, tropo, tropo_cli, tropo_json
from tropo.check.workspace import open_workspace
from tropo.review.retrieval import estimate_tokens, open_search, trim
from tropo.review.search import word_counts
from tropo.review.search_index import BodyIndex


@pytest.fixture
def search_ws(repo_dir: Path) -> Path:
    write_files(repo_dir, SEARCH)
    commit_all(repo_dir)
    return repo_dir


QUERIES = [
    ["release", "truth"], ["where is release truth owned"], ["auth"], ["the"], ["truth"],
    ["café"], ["agent-workspace"], ["retrieval", "release"], ["filler"], ["!!!"],
    ["truth", "--type", "decision"], ["truth", "--type", ""], ["truth", "--path", "modules/*"],
    ["truth", "--path", "notes/*", "--path", "decisions/*"], ["release", "--edge", "affects"],
    ["release", "--edge", "affects:agent-workspace", "--edge", "affects"],
    ["truth", "--k", "2"], ["truth", "--k", "0"], ["truth", "--snippet", "0"],
    ["release truth", "--snippet", "30"], ["workspace", "--explain"], ["agent", "--explain"],
]


FINDS = [
    ["release", "truth"], ["where is release truth owned"], ["release truth", "--budget", "30"],
    ["release truth", "--budget", "1"], ["release truth", "--budget", "60", "--k", "3"],
    ["truth", "--budget", "120"], ["truth", "--budget", "0"], ["truth", "--k", "0"],
    ["truth", "--type", "decision", "--edge", "affects:agent-workspace"], ["nothing-matches-this"],
]


CASES = [("query", a) for a in QUERIES] + [("find", a) for a in FINDS]
SUITE_DRIVER = Path(__file__).parents[1] / "suite_tropo_driver.py"


@pytest.fixture(scope="module")
def suite_answers(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """vivary-tropo's answer to every case, each on a fresh copy of the search workspace,
    all in one process of the oracle's Python (the answers name no path)."""
    exe = upstream_bin("tropo")
    if exe is None:
        missing("upstream tropo not installed: run `make upstream` to compare")
    base = tmp_path_factory.mktemp("suite-query")
    home = base / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as env:  # the module's workspace, built before any test's git identity
        for name, value in (("HOME", str(home)), ("GIT_CONFIG_NOSYSTEM", "1"),
                            ("GIT_AUTHOR_NAME", "Test Author"), ("GIT_AUTHOR_EMAIL", "author@example.com"),
                            ("GIT_COMMITTER_NAME", "Test Committer"),
                            ("GIT_COMMITTER_EMAIL", "committer@example.com")):
            env.setenv(name, value)
        ws = base / "ws"
        ws.mkdir()
        git(ws, "init", "-q")
        write_files(ws, SEARCH)
        commit_all(ws)
    runs = []
    for index, (cmd, args) in enumerate(CASES):
        copy = base / f"case-{index}" / "ws"
        shutil.copytree(ws, copy, symlinks=True)
        runs.append({"cwd": str(copy), "argv": [cmd, *args, "--json"]})
    proc = subprocess.run([str(exe.parent / "python"), str(SUITE_DRIVER)], input=json.dumps(runs),
                          capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answers: list[dict[str, Any]] = []
    for answer in json.loads(proc.stdout):
        assert answer["code"] == 0, answer
        answers.append(json.loads(answer["stdout"]))
    return answers


@pytest.mark.parametrize(("cmd", "args"), CASES, ids=lambda a: " ".join(a) if isinstance(a, list) else a)
def test_ranks_and_packets_like_upstream(search_ws: Path, suite_answers: list[dict[str, Any]],
                                         cmd: str, args: list[str]) -> None:
    code, ours = tropo_json(cmd, *args, cwd=search_ws)
    assert code == 0
    assert ours == suite_answers[CASES.index((cmd, args))]


def test_query_ranking_pinned(search_ws: Path) -> None:
    """What the agreement above pins, stated without the oracle."""
    _, out = tropo_json("query", "release", "truth", "--explain", cwd=search_ws)
    top = out["results"][0]
    assert top["id"] == "release-workflow"
    assert top["reasons"] == ["title/id match", "frontmatter match", "body match", "edge context match"] \
        or top["reasons"][0] == "title/id match"
    assert [r["score"] for r in out["results"]] == sorted((r["score"] for r in out["results"]), reverse=True)
    _, out = tropo_json("query", "truth", "--type", "", cwd=search_ws)
    assert {r["id"] for r in out["results"]} == {"loose", "empty"}
    _, out = tropo_json("query", "release", "--edge", "affects:agent-workspace", cwd=search_ws)
    assert [r["id"] for r in out["results"]] == ["release-workflow"]
    assert out["results"][0]["edges"] == [{"field": "affects", "to": "agent-workspace"}]


@given(st.text(alphabet="ab1_ é-.\n\tAB", max_size=40), st.sampled_from(["a", "b", "ab", "1", "a1", "b1b"]))
def test_word_counts_equal_word_boundary_regex(text: str, term: str) -> None:
    low = text.lower()
    assert word_counts(low).get(term, 0) == len(re.findall(rf"\b{re.escape(term)}\b", low))


def test_index_reads_only_new_blobs(search_ws: Path) -> None:
    ws = open_workspace(search_ws)
    oids = {e.oid for rel, e in ws.entries.items() if rel.endswith(".md")}
    reads: list[str] = []

    def read(oid: str) -> bytes:
        reads.append(oid)
        return git(search_ws, "cat-file", "blob", oid).encode()

    directory = search_ws / ".git" / "vivary"
    first = BodyIndex(directory)
    assert first.sync(oids, read) == len(oids) == len(reads)
    first.close()
    reads.clear()
    again = BodyIndex(directory)
    assert again.sync(oids, read) == 0 and reads == []
    assert again.term_counts(["truth"])  # postings survived the reopen
    again.close()


def test_warm_query_uses_index_and_sees_edits(search_ws: Path) -> None:
    _, cold = tropo_json("query", "truth", cwd=search_ws)
    assert (search_ws / ".git" / "vivary" / "search.v1.sqlite").is_file()
    _, warm = tropo_json("query", "truth", cwd=search_ws)
    _, nocache = tropo_json("query", "truth", "--no-cache", cwd=search_ws)
    assert cold == warm == nocache
    # An unstaged edit, a new untracked file and a staged one are all seen at once.
    (search_ws / "notes" / "loose.md").write_text("now about zebras only\n")
    write_files(search_ws, {"notes/zebra-care.md": "# Zebra care\n"})
    _, out = tropo_json("query", "zebra", "--explain", cwd=search_ws)
    # "zebra" stands alone in the title; inside "zebras" it is only a phrase match.
    assert [(r["id"], r["reasons"]) for r in out["results"]] == [
        ("zebra-care", ["title/id match", "path match", "body match"]), ("loose", ["body match"])]
    _, out = tropo_json("query", "zebras", cwd=search_ws)
    assert [r["id"] for r in out["results"]] == ["loose"]
    git(search_ws, "add", "notes/zebra-care.md")
    _, staged = tropo_json("query", "zebra", "--staged", cwd=search_ws)
    assert [r["id"] for r in staged["results"]] == ["zebra-care"]  # loose.md's edit is unstaged
    _, head = tropo_json("query", "zebras", "--rev", "HEAD", cwd=search_ws)
    assert head["results"] == []


def test_index_is_disposable(search_ws: Path) -> None:
    _, before = tropo_json("query", "release", cwd=search_ws)
    db = search_ws / ".git" / "vivary" / "search.v1.sqlite"
    db.write_bytes(b"not a database at all" * 10)
    for extra in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        extra.unlink(missing_ok=True)
    _, after = tropo_json("query", "release", cwd=search_ws)
    assert after == before


def test_open_search_records_match_graph(search_ws: Path) -> None:
    search = open_search(open_workspace(search_ws))
    ids = [r.id for r in search.records]
    assert ids == sorted(ids) and "ghost" not in ids
    rw = next(r for r in search.records if r.id == "release-workflow")
    assert rw.edges == (("affects", "agent-workspace"),)  # the broken ref is not an edge here
    assert "Release truth is owned" in search.index.body(rw.key)


def test_trim_keeps_order_and_fits() -> None:
    items = [{"id": f"n{i}", "type": "t", "path": f"p/{i}.md", "reason": "title/id match; body match",
              "snippet": "x" * 160, "edges": [{"field": "f", "to": "y"}]} for i in range(5)]
    full = estimate_tokens(items)
    same, tokens = trim(items, full)
    assert same == items and tokens == full
    small, tokens = trim(items, 60)
    assert tokens <= 60 or len(small) == 1
    assert [r["id"] for r in small] == [f"n{i}" for i in range(len(small))]
    one, _ = trim(items, 1)
    assert one == [{"id": "n0", "type": "t", "path": "p/0.md", "reason": "title/id match"}]


def test_bad_input(search_ws: Path) -> None:
    for cmd in ("query", "find"):
        proc = tropo_cli(cmd, "   ", cwd=search_ws)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1 and "give the text" in proc.stderr
    code, out = tropo_json("query", "the", "of", cwd=search_ws)  # only stopwords: all terms count
    assert code == 0 and out["results"]
    code, out = tropo_json("find", "truth", "--budget", "1", cwd=search_ws)
    assert code == 0 and len(out["results"]) == 1 and out["budget"] == 1
    proc = tropo_cli("query", "x", "--rev", "no-such-rev", cwd=search_ws)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = tropo_cli("query", "x", "--staged", "--rev", "HEAD", cwd=search_ws)
    assert proc.returncode == 2
    code, _, _ = tropo("query", "x", "--k", "-1", cwd=search_ws)
    assert code == 2


def test_query_outside_git(tmp_path: Path) -> None:
    write_files(tmp_path, SEARCH)
    code, out = tropo_json("find", "release", "truth", cwd=tmp_path)
    assert code == 0 and out["results"][0]["id"] == "release-workflow"
    assert not (tmp_path / ".git").exists()


def test_locked_index_falls_back_to_memory(search_ws: Path) -> None:
    _, before = tropo_json("query", "release", cwd=search_ws)
    write_files(search_ws, {"notes/new.md": "# New release note\n"})  # needs an index write
    holder = sqlite3.connect(search_ws / ".git" / "vivary" / "search.v1.sqlite")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        _, during = tropo_json("query", "release", cwd=search_ws)
    finally:
        holder.rollback()
        holder.close()
    _, after = tropo_json("query", "release", cwd=search_ws)
    assert during == after and len(after["results"]) == len(before["results"]) + 1
