"""The root AGENTS.md, for agents working on this repository: short, linking rather than
copying, and unable to go stale on what it does say (the layer order is
docs/architecture.md's, every link and anchor resolves, `make test` is a Makefile target)."""

from __future__ import annotations

import re

from tests.support.layout import PACKAGES, ROOT

TEXT = (ROOT / "AGENTS.md").read_text(encoding="utf-8")


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def test_agents_md_is_short_and_every_link_resolves() -> None:
    assert len(TEXT.splitlines()) <= 60  # a page an agent reads whole at the start
    links = re.findall(r"\]\(([^)\s]+)\)", TEXT)
    assert "docs/architecture.md" in {link.partition("#")[0] for link in links}
    for link in links:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.is_file(), link
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.MULTILINE)
            assert anchor in {_slug(h) for h in headings}, link


def test_agents_md_says_what_the_architecture_and_the_makefile_say() -> None:
    chain = "vivary -> create_vivary -> hooks -> workbench -> strato, exo -> tropo"
    assert f"`{chain}`" in TEXT
    assert f"`{chain}`" in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert all(p in chain for p in PACKAGES)
    assert re.search(r"^test:", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert "`make test`" in TEXT
    for owner in ("tropo/git/", "strato/agents/process.py", "tropo/console.py", "tests/support/"):
        assert owner in TEXT and (ROOT / owner).exists(), owner
