"""File predicates are jailed to the workspace: no `..`, no absolute paths, no symlinks
out, no special files; missing files are simply false."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from strato.flow.expr.errors import ExprError
from strato.flow.expr.evaluator import evaluate


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "build").mkdir(parents=True)
    (root / "build" / "report.json").write_text('{"status": "passed"}')
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    return root


def ev(source: str, root: Path | None) -> object:
    return evaluate(source, {}, root)


def test_inside_the_workspace(ws: Path) -> None:
    assert ev("file_exists('build/report.json')", ws) is True
    assert ev("file_exists('build/missing.json')", ws) is False
    assert ev("file_exists('build')", ws) is False  # a directory is not a file
    assert ev("file_contains('build/report.json', 'passed')", ws) is True
    assert ev("file_contains('build/report.json', 'failed')", ws) is False
    assert ev("file_contains('nope.txt', 'x')", ws) is False


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "build/../../secret.txt",
        "/etc/passwd",
        "build/../report.json",
        "a\x00b",
        "",
        "\\\\server\\share",
    ],
)
def test_escapes_are_refused(ws: Path, path: str) -> None:
    for source in ("file_exists(result)", "file_contains(result, 'S')"):
        with pytest.raises(ExprError) as info:
            evaluate(source, {"result": path}, ws)
        assert info.value.kind == "validation_error"


def test_symlinks_out_are_refused(ws: Path, tmp_path: Path) -> None:
    (ws / "link.txt").symlink_to(tmp_path / "secret.txt")
    (ws / "linkdir").symlink_to(tmp_path)
    for rel in ("link.txt", "linkdir/secret.txt"):
        with pytest.raises(ExprError) as info:
            ev(f"file_contains('{rel}', 'SECRET')", ws)
        assert info.value.kind == "validation_error"


def test_symlink_inside_is_followed(ws: Path) -> None:
    (ws / "alias.json").symlink_to(ws / "build" / "report.json")
    assert ev("file_contains('alias.json', 'passed')", ws) is True


def test_special_files_read_as_absent(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    assert ev("file_exists('pipe')", ws) is False
    assert ev("file_contains('pipe', 'x')", ws) is False  # and does not block


def test_oversized_file_is_a_resource_limit(ws: Path) -> None:
    with open(ws / "big.bin", "wb") as fh:
        fh.truncate(16 * 1024 * 1024 + 1)  # sparse: no 16 MiB actually written
    assert ev("file_exists('big.bin')", ws) is True
    with pytest.raises(ExprError) as info:
        ev("file_contains('big.bin', 'x')", ws)
    assert info.value.kind == "resource_limit"


def test_no_workspace_root() -> None:
    with pytest.raises(ExprError) as info:
        ev("file_exists('x')", None)
    assert info.value.kind == "validation_error"
