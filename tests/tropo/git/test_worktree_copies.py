"""A cold check reads HEAD's blobs from the work tree's files when they hold the same
bytes. Who controls what: the work tree is anyone's to change (an editor, a clean or
smudge filter, a symlink, a FIFO planted where a document was), HEAD's tree is what the
stored check state is keyed by. So a file is used only when it hashes to the blob, and
the bytes read are always the blob's, whatever the work tree holds."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.repos import commit_all, git, write_files
from tests.support.vaults import drop_answers, make_vault, tropo_json
from tropo.git.snapshot import Entry, IndexSnapshot, tree_snapshot

BLOB = b"---\nstatus: active\n---\n# Note\n"


def _snapshot(root: Path) -> tuple[Entry, IndexSnapshot]:
    tree = git(root, "rev-parse", "HEAD^{tree}").strip()
    oid = git(root, "rev-parse", "HEAD:notes/a.md").strip()
    return Entry("notes/a.md", oid, 0o100644), tree_snapshot(root.resolve(), tree, worktree_copies=True)


def _committed(root: Path) -> None:
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_bytes(BLOB)
    commit_all(root)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_the_bytes_read_are_the_blobs_whatever_the_work_tree_holds(repo_dir: Path, planted: bytes) -> None:
    if not (repo_dir / "notes").exists():
        _committed(repo_dir)
    (repo_dir / "notes" / "a.md").write_bytes(planted)
    entry, snapshot = _snapshot(repo_dir)
    assert snapshot.read(entry) == BLOB


def test_a_symlink_or_fifo_in_place_of_the_file_is_never_followed_nor_waited_on(repo_dir: Path,
                                                                                  tmp_path: Path) -> None:
    _committed(repo_dir)
    outside = tmp_path / "outside.md"
    outside.write_bytes(BLOB)  # the very bytes, but through a link: not read there
    path = repo_dir / "notes" / "a.md"
    path.unlink()
    path.symlink_to(outside)
    entry, snapshot = _snapshot(repo_dir)
    assert snapshot.read(entry) == BLOB
    path.unlink()
    os.mkfifo(path)  # opening it to read would block for a writer
    assert snapshot.read(entry) == BLOB


def test_a_cold_check_through_a_clean_filter_reports_heads_blobs(repo_dir: Path) -> None:
    """With a filter, git calls a file clean that differs from its blob byte for byte:
    the stored state of HEAD's tree must still be the blobs' check."""
    make_vault(repo_dir)
    git(repo_dir, "config", "filter.fix.clean", "sed s/relationshiq:/relationship:/")
    write_files(repo_dir, {".gitattributes": "people/*.md filter=fix\n"})
    commit_all(repo_dir)
    clean = tropo_json("check", "--rev", "HEAD", cwd=repo_dir)
    jeff = repo_dir / "people" / "jeff.md"  # same size, other bytes: a field HEAD lacks
    jeff.write_text(jeff.read_text().replace("relationship:", "relationshiq:"))
    git(repo_dir, "update-index", "-q", "--really-refresh")
    assert git(repo_dir, "status", "--porcelain").strip() == ""  # git: nothing changed
    assert tropo_json("check", "--no-cache", cwd=repo_dir) != clean  # the disk's bytes differ
    drop_answers(repo_dir)
    for what in ("states", "docs", "parse"):
        for found in (repo_dir / ".git" / "vivary").glob(f"{what}.v*"):
            if found.is_dir():
                for f in found.iterdir():
                    f.unlink()
            else:
                found.unlink()
    assert tropo_json("check", cwd=repo_dir) == clean  # HEAD's state from HEAD's blobs
