"""The workbench's browser fixtures: one headless Chromium per module, and a watched page
per test whose screenshots land where ``VIVARY_SCREENSHOTS`` says (else a temporary folder)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import ARGS, CHROMIUM, Watched
from tests.support.requirements import missing


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")
    if exe is None:
        missing("no Chromium for the workbench's browser tests: apt-get install chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed: pip install -e '.[dev]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def watched(browser: Any, tmp_path: Path) -> Iterator[Watched]:
    chosen = os.environ.get("VIVARY_SCREENSHOTS")
    w = Watched(browser, Path(chosen).resolve() if chosen else tmp_path / "screenshots")
    yield w
    w.close()
