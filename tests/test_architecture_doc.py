"""docs/architecture.md against the tree: every file and folder its drawing and its
"where does X live" table name exists, and every subpackage is in the drawing."""

from __future__ import annotations

import re

from tests.support.layout import PACKAGES, ROOT

DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
DRAWING = DOC.split("```")[1]
TABLE = DOC[DOC.index("## Where does X live"):]


def _exists(name: str) -> bool:
    """A path from the root, or a bare file or folder name found in some package."""
    if (ROOT / name).exists():
        return True
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return any(any(p.name == base for p in (ROOT / pkg).rglob(base)) for pkg in PACKAGES)


def test_every_module_and_folder_the_doc_names_exists() -> None:
    named = set(re.findall(r"[\w/]+\.py\b", DRAWING)) | set(re.findall(r"\b[\w]+/(?=\s)", DRAWING))
    named |= {n for n in re.findall(r"`([\w./]+)`", TABLE) if n.endswith((".py", "/"))}
    code = {n for n in named if not n.startswith((".git", "/"))}  # not repository paths
    assert sorted(n for n in code if not _exists(n)) == []


def test_every_subpackage_is_in_the_drawing() -> None:
    words = set(re.findall(r"\w+", DRAWING))
    subpackages = {p.parent.name for pkg in PACKAGES for p in (ROOT / pkg).glob("*/__init__.py")}
    assert sorted(subpackages - words) == []
