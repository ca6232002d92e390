"""Ids from names in any script; ASCII names and refs exactly as vivary-tropo reads them."""

from __future__ import annotations

import re
import string
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import commit_all, write_files
from tests.tropo.helpers import codes, tropo_json
from tropo.check.ids import is_slug, slugify


def _oracle_slug(name: str) -> str:
    """vivary-tropo 0.5.4's rule, restated: the contract for ASCII names."""
    s = re.sub(r"\.(md|markdown)$", "", name).lower()
    return re.sub(r"[^a-z0-9._-]+", "-", s).strip("-") or "untitled"


@settings(max_examples=500, deadline=None)
@given(st.text(string.printable, max_size=20))
def test_an_ascii_name_derives_vivary_tropos_id_and_refs_read_alike(name: str) -> None:
    assert slugify(name) == _oracle_slug(name)
    assert is_slug(name) == bool(re.match(r"^[a-z0-9][a-z0-9._-]*$", name))


def test_names_in_other_scripts_stay_distinct_and_are_refs() -> None:
    names = ["日本語.md", "한국어.md", "中文笔记.md", "2024-会议.md", "2024-计划.md", "Café.md",
             "Über Uns.md", "हिन्दी.md", "Ελληνικά.md"]
    ids = [slugify(n) for n in names]
    assert len(set(ids)) == len(ids), ids
    assert ids[:2] == ["日本語", "한국어"] and ids[6] == "über-uns"
    assert all(is_slug(i) for i in ids)
    assert slugify("e\u0301t\u00e9.md") == slugify("\u00e9t\u00e9.md")  # NFD names as NFC
    assert not is_slug("Über") and not is_slug("-日本") and not is_slug("日本 語")


def test_a_repository_written_in_chinese_and_korean_checks_clean(repo_dir: Path) -> None:
    write_files(repo_dir, {
        "tropo.toml": 'version = 1\n[base]\nallow_untyped = true\n'
                      '[types.note]\nfolder = "notes"\noptional = { related = "ref-list" }\n',
        "notes/日本語.md": "---\nrelated: [한국어, 2024-会议]\n---\n# 日本語\n",
        "notes/한국어.md": "# 한국어\n",
        "notes/2024-会议.md": "# 会议\n",
        "notes/2024-计划.md": "---\nrelated: [日本語]\n---\n# 计划\n",
    })
    commit_all(repo_dir)
    code, out = tropo_json("check", cwd=repo_dir)
    assert (code, codes(out)) == (0, [])
    _, graph = tropo_json("graph", cwd=repo_dir)
    assert {n["id"] for n in graph["nodes"]} == {"日本語", "한국어", "2024-会议", "2024-计划"}
    assert graph["counts"] == {"nodes": 4, "edges": 3, "broken": 0}
