"""``tropo query`` while another process holds the search index's write lock.

SQLite's default busy timeout made such a query wait 5 s per write it tried (about 10 s
in all) before it fell back to an in-memory index. A reader must not wait on a writer:
it answers from memory at once, and the holder is left alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.repos import commit_all, write_files
from tests.support.vaults import SEARCH, tropo_cli
from tropo.review.search_index import BodyIndex

HOLDER = textwrap.dedent("""
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO records VALUES ('holder', x'00')")
    print("held", flush=True)
    sys.stdin.readline()  # released only when the test says so, after the query answered
    db.execute("ROLLBACK")
    print("released", flush=True)
""")


@pytest.fixture
def search_ws(repo_dir: Path) -> Path:
    write_files(repo_dir, SEARCH)
    commit_all(repo_dir)
    return repo_dir


def _ids(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    return [r["id"] for r in json.loads(proc.stdout)["results"]]


def test_query_answers_while_another_process_holds_the_index(search_ws: Path) -> None:
    before = _ids(tropo_cli("query", "release", "--json", cwd=search_ws))
    write_files(search_ws, {"notes/new.md": "# New release note\n"})  # needs an index write
    index = search_ws / ".git" / "vivary" / "search.v1.sqlite"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(index)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        during = tropo_cli("query", "release", "--json", cwd=search_ws)
        assert during.stderr == ""
        assert holder.poll() is None  # the lock was held for the whole query
    finally:
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == "released\n"
        holder.wait()
    assert sorted(_ids(during)) == sorted([*before, "new"])
    after = _ids(tropo_cli("query", "release", "--json", cwd=search_ws))
    assert after == _ids(during)


def test_the_index_never_waits_for_a_lock(tmp_path: Path) -> None:
    """Waiting would only show as time, which tests do not assert: pin the cause instead.
    SQLite's busy timeout of the on-disk index is zero, so a locked write fails at once."""
    index = BodyIndex(tmp_path)
    try:
        assert (tmp_path / "search.v1.sqlite").is_file()  # the on-disk index, not memory
        assert index._db.execute("PRAGMA busy_timeout").fetchone() == (0,)
    finally:
        index.close()
