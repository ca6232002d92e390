"""Ids from names in any script; ASCII names and refs exactly as vivary-tropo reads them."""

from __future__ import annotations

import re
import string
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.cli import run_cli
from tests.support.repos import commit_all, git, write_files
from tests.support.vaults import codes, tropo_cli, tropo_json
from tropo.check.ids import is_slug, slugify, upstream_aliases, upstream_slugify


def _oracle_slug(name: str) -> str:
    """vivary-tropo 0.5.4's rule, restated: the contract for ASCII names."""
    s = re.sub(r"\.(md|markdown)$", "", name).lower()
    return re.sub(r"[^a-z0-9._-]+", "-", s).strip("-") or "untitled"


@settings(max_examples=500, deadline=None)
@given(st.text(string.printable, max_size=20))
def test_an_ascii_name_derives_vivary_tropos_id_and_refs_read_alike(name: str) -> None:
    assert slugify(name) == _oracle_slug(name)
    assert is_slug(name) == bool(re.match(r"^[a-z0-9][a-z0-9._-]*$", name))


# vivary-tropo 0.5.4's ids of these names, as its `tropo graph --json` printed them.
UPSTREAM_IDS = {"Café Ünïcode.md": "caf-n-code", "Über.md": "ber", "ÉCOLE.md": "cole",
                "naïve café.md": "na-ve-caf", "Ångström_x.md": "ngstr-m_x", "résumé-2024.md": "r-sum--2024"}


def test_vivary_tropos_id_of_an_accented_name_is_an_alias_of_ours() -> None:
    assert {n: upstream_slugify(n) for n in UPSTREAM_IDS} == UPSTREAM_IDS
    docs = [(f"notes/{n}", slugify(n)) for n in UPSTREAM_IDS] + [("notes/plain.md", "plain")]
    assert upstream_aliases(docs, {i for _, i in docs}, "ws") == {
        old: slugify(n) for n, old in UPSTREAM_IDS.items()}
    # an index document takes its folder's id, in both; a root README the root's
    assert upstream_aliases([("Café/README.md", "café"), ("README.md", "ünï")], set(), "Ünï") == {
        "caf": "café", "n": "ünï"}
    # an id a document holds today is never an alias; of two old namesakes the first wins
    assert upstream_aliases([("Café.md", "café")], {"café", "caf"}, "ws") == {}
    assert upstream_aliases([("Café.md", "café"), ("Cafè.md", "cafè")], set(), "ws") == {"caf": "café"}


def test_a_workspace_written_for_vivary_tropo_checks_clean_with_advice(repo_dir: Path) -> None:
    """Refs by vivary-tropo's ids resolve, as edges and in the check, with an info
    finding (I221) naming the id to write; exit 0, from the cache and without it."""
    write_files(repo_dir, {
        "tropo.toml": 'version = 1\n[types.note]\nfolder = "notes"\n'
                      'optional = { about = "ref-list", main = "ref" }\n',
        "notes/Café Ünïcode.md": "# Café\n",
        "notes/résumé-2024.md": "# CV\n",
        "notes/index-of.md": "---\nabout: [caf-n-code, r-sum--2024]\nmain: nowhere\n---\n# I\n",
    })
    commit_all(repo_dir)
    for flags in ([], [], ["--no-cache"]):
        code, out = tropo_json("check", *flags, cwd=repo_dir)
        assert code == 1 and (out["errors"], out["warnings"], out["clean"]) == (1, 0, 2)
        assert [(f["line"], f["level"], f["code"]) for f in out["findings"]] == [
            (2, "info", "I221"), (2, "info", "I221"), (3, "error", "W220")]
        assert out["findings"][0]["message"] == (
            "field 'about': ref 'caf-n-code' is the id vivary-tropo derives; "
            "resolved to 'café-ünïcode', the id to write now")
    text = tropo_cli("check", cwd=repo_dir).stdout
    assert text.count("info I221") == 2 and "1 error(s), 0 warning(s)" in text
    assert "I221" not in tropo_cli("check", "--quiet", cwd=repo_dir).stdout
    (repo_dir / "notes/index-of.md").write_text("---\nabout: [caf-n-code]\n---\n# I\n")
    code, out = tropo_json("check", cwd=repo_dir)
    assert (code, out["errors"], out["warnings"], out["clean"]) == (0, 0, 0, 3)
    assert tropo_json("stats", cwd=repo_dir)[1]["clean"] == 3
    _, graph = tropo_json("graph", cwd=repo_dir)
    assert graph["edges"] == [{"from": "index-of", "field": "about", "to": "café-ünïcode", "broken": False}]
    assert run_cli("vivary", "hooks", "install", "--root", str(repo_dir)).returncode == 0
    git(repo_dir, "commit", "-qam", "advice refuses no commit")
    assert git(repo_dir, "log", "-1", "--format=%s").strip() == "advice refuses no commit"


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
