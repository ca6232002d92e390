"""The workbench's pages in headless Chromium through Playwright: where the browser is,
how it starts, and a page that keeps its console errors and the URLs it asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


class Watched:
    """A page whose console errors and uncaught exceptions are kept."""

    def __init__(self, browser: Any, shots: Path) -> None:
        self.shots = shots
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.requested: list[str] = []
        self.page.on("request", lambda r: self.requested.append(r.url))

    def shot(self, name: str) -> None:
        self.shots.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(self.shots / f"workbench-{name}.png"))
        assert (self.shots / f"workbench-{name}.png").stat().st_size > 0

    def close(self) -> None:
        self.context.close()
