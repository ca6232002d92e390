"""The README's docs table is the way in: every page of docs/ is linked from it, and
every link there names a page that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#[^)]*)?\)", readme))
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    assert sorted(pages - linked) == [], "docs pages the README does not link"
    assert sorted(linked - pages) == [], "README links to docs pages that do not exist"
