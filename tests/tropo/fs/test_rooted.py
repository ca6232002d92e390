"""Writes confined to a root: nothing escapes it, nothing half-written remains."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tropo.fs.rooted import UnsafePath, write_within


@pytest.mark.parametrize("rel", ["../evil", "a/../../evil", "/etc/passwd", "a//b", "./a", ""])
def test_paths_escaping_the_root_are_refused(tmp_path: Path, rel: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(UnsafePath):
        write_within(root, rel, b"x")
    assert list(tmp_path.rglob("*")) == [root]


def test_symlinked_parent_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "modules").symlink_to(outside)
    with pytest.raises(UnsafePath, match="symlink: modules"):
        write_within(root, "modules/index.md", b"x")
    assert list(outside.iterdir()) == []


def test_symlinked_target_is_refused_and_left_alone(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "link.md").symlink_to(victim)
    with pytest.raises(UnsafePath):
        write_within(tmp_path, "link.md", b"x")
    assert victim.read_text() == "keep"


def test_file_in_a_parent_position_is_refused(tmp_path: Path) -> None:
    (tmp_path / "changes").write_text("a file")
    with pytest.raises(UnsafePath, match="not a directory"):
        write_within(tmp_path, "changes/x.md", b"x")


def test_write_replaces_whole_file_with_mode_and_no_leftovers(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a/f.sh").write_text("old")
    write_within(tmp_path, "a/f.sh", b"new", mode=0o755)
    assert (tmp_path / "a/f.sh").read_bytes() == b"new"
    assert os.stat(tmp_path / "a/f.sh").st_mode & 0o777 == 0o755
    write_within(tmp_path, "b/c/d.md", b"deep")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "c", "d.md", "f.sh"]
