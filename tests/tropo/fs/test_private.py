"""The private folder under .git/vivary: every folder on the way checked, none followed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tropo.fs.private import PlantedLink, private_folder


def test_every_folder_on_the_way_is_checked_and_a_missing_one_is_made_ours(tmp_path: Path) -> None:
    top = tmp_path / "vivary"
    made = private_folder(tmp_path, "bg", "r1", "dispatch", "t", create=True)
    assert made.is_dir() and (made.stat().st_mode & 0o777) == 0o700
    outside = tmp_path / "outside"
    outside.mkdir()
    for n, planted in enumerate(("bg/r1/dispatch/t", "bg/r1/dispatch", "bg", "")):
        where = top / planted if planted else top
        target = tmp_path / f"moved-{n}"
        where.rename(target)
        where.symlink_to(outside, target_is_directory=True)
        for create in (True, False):
            with pytest.raises(PlantedLink, match="is a symlink"):
                private_folder(tmp_path, "bg", "r1", "dispatch", "t", create=create)
        where.unlink()
        target.rename(where)
    (top / "bg" / "file").write_text("x")
    with pytest.raises(PlantedLink, match="not a folder"):
        private_folder(tmp_path, "bg", "file", "x", create=True)
    assert private_folder(tmp_path, "bg", "absent", "deeper") == top / "bg" / "absent" / "deeper"
    assert not (top / "bg" / "absent").exists() and list(outside.iterdir()) == []
