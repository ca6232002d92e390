"""`tropo map` prints file and folder names, which are whoever wrote the tree's: on a
terminal none of them reaches it raw (no escape sequence that writes the clipboard or
erases a line, no invisible character)."""

from __future__ import annotations

from pathlib import Path

from tests.support.terminal import on_terminal

CLIPBOARD, ERASE = "\x1b]52;c;ZXZpbA==\x07", "\x1b[2K"


def test_map_shows_hostile_names_escaped(tmp_path: Path) -> None:
    folder = tmp_path / f"mod{CLIPBOARD}"
    folder.mkdir()
    (folder / f"a{CLIPBOARD}{ERASE}.md").write_text("x" * 4000)
    (folder / "b\u034f.md").write_text("y\n")
    code, out = on_terminal("tropo", "map", str(tmp_path), cwd=tmp_path)
    assert code == 0, out
    assert "\x1b" not in out and "\x07" not in out and "\u034f" not in out, repr(out)
    assert "modU+001B]52;c;ZXZpbA==U+0007" in out  # the folder, in the directory list
    assert "aU+001B]52;c;ZXZpbA==U+0007U+001B[2K.md (4000 B)" in out  # the file, among the largest
    assert "bU+034F.md" in out
