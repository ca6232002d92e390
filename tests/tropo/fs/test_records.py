"""Record files under .git/vivary: whole-or-nothing, disposable, bounded."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tropo.fs.records import VERSION, Shelf, Store, load, save


def test_a_missing_or_damaged_record_reads_as_none(tmp_path: Path) -> None:
    assert load(tmp_path / "absent") is None
    (tmp_path / "bad").write_bytes(b"\x00garbage\xff")
    assert load(tmp_path / "bad") is None
    save(tmp_path / "good", {"k": (1, "v")})
    assert load(tmp_path / "good") == {"k": (1, "v")}


def test_an_unwritable_cache_is_only_slower(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    save(blocker / "record", {"k": 1})  # no exception
    store = Store(blocker, "parse")
    store.put("k", 1)
    store.save()
    assert store.get("k") == 1


def test_store_keeps_what_was_used(tmp_path: Path) -> None:
    store = Store(tmp_path, "memo")
    for i in range(1500):
        store.put(str(i), i)
    store.save()
    again = Store(tmp_path, "memo")
    assert again.get("3") == 3
    again.put("new", 0)
    again.save()  # 1501 entries, 2 used: only the used survive
    assert sorted(Store(tmp_path, "memo")._data) == ["3", "new"]


def test_shelf_keeps_the_newest_records(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path, "results", keep=3)
    for i in range(5):
        shelf.put(f"ns-{i}", i)
        os.utime(tmp_path / f"results.v{VERSION}" / f"ns-{i}", ns=(time.time_ns(), 10**18 + i))
    assert shelf.keys("ns-") == ["ns-4", "ns-3", "ns-2"]
    shelf.put("other-x", "x")
    assert "ns-2" not in shelf.keys("") and shelf.get("other-x") == "x"
    assert shelf.get("ns-0") is None
    assert Shelf(None, "results", keep=3).keys("") == []


def test_what_another_version_kept_is_removed_on_the_next_write(tmp_path: Path) -> None:
    (tmp_path / "docs.v3").write_bytes(b"old memo")
    (tmp_path / "results.v2").mkdir()
    (tmp_path / "results.v2" / "k").write_bytes(b"old result")
    (tmp_path / "docs.vintage").write_bytes(b"not ours: no version number")
    (tmp_path / "graphs.v1").mkdir()  # another cache's name: left alone
    store = Store(tmp_path, "docs")
    store.put("k", 1)
    store.save()
    Shelf(tmp_path, "results", keep=2).put("k", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["docs.vintage", "graphs.v1", f"docs.v{VERSION}", f"results.v{VERSION}"])
