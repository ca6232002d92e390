from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.repos import write_files
from tests.support.vaults import make_vault, tropo, tropo_cli, tropo_json
from tropo.check import reports
from tropo.check.graph import Edge, Graph, Node
from tropo.check.workspace import open_workspace

CHAIN = """\
[types.node]
folder = "nodes"
optional = { depends_on = "ref", related = "ref-list" }
"""


def _chain(root: Path) -> None:
    write_files(root, {
        "tropo.toml": CHAIN,
        "nodes/a.md": "---\ndepends_on: b\n---\n",
        "nodes/b.md": "---\ndepends_on: c\n---\n",
        "nodes/c.md": "---\nrelated: [a, d]\n---\n",
        "nodes/d.md": "# D\n",
        "nodes/e.md": "---\nrelated: [d]\n---\n",
    })


def test_blast_distances_depth_and_cycles(tmp_path: Path) -> None:
    _chain(tmp_path)
    code, out = tropo_json("blast", "d", cwd=tmp_path)
    assert code == 0
    assert [(r["id"], r["distance"], r["via"]) for r in out["impacted"]] == [
        ("c", 1, "related"), ("e", 1, "related"), ("b", 2, "depends_on"), ("a", 3, "depends_on")]
    _, out = tropo_json("blast", "d", "--depth", "1", cwd=tmp_path)
    assert [r["id"] for r in out["impacted"]] == ["c", "e"]
    _, out = tropo_json("blast", "a", cwd=tmp_path)  # a <- c <- b <- a: the target is excluded
    assert [r["id"] for r in out["impacted"]] == ["c", "b"]
    code, _, err = tropo("blast", "nope", cwd=tmp_path)
    assert code == 1 and "no document with id 'nope'" in err
    code, text, _ = tropo("blast", "d", cwd=tmp_path)
    assert "4 document(s) depend on it" in text


def test_types_stats_signal(tmp_path: Path) -> None:
    make_vault(tmp_path, {"loose.md": "# loose\n"})
    _, t = tropo_json("types", cwd=tmp_path)
    assert t["types"]["person"]["folders"] == ["people", "contacts"]
    assert t["derive"] == ["id", "title", "created", "updated"]
    _, s = tropo_json("stats", cwd=tmp_path)
    assert s == {"total": 5, "by_type": {"untyped": 1, "meeting": 1, "person": 1, "project": 1,
                                         "decision": 1}, "clean": 5, "with_errors": 0, "warnings_only": 0}
    _, sig = tropo_json("signal", cwd=tmp_path)
    assert {"path": "people/jeff.md", "type": "person", "signal": {"relationship": "self"}} in sig
    _code, text, _ = tropo("signal", cwd=tmp_path)
    assert "loose.md  [untyped]  (no signal — fully derived)" in text


def test_init_writes_once(tmp_path: Path) -> None:
    code, text, _ = tropo("init", str(tmp_path), "--packs", "dev-project,coordination")
    assert code == 0 and "packs: dev-project, coordination" in text
    assert 'packs = ["dev-project", "coordination"]' in (tmp_path / "tropo.toml").read_text()
    assert tropo_json("types", cwd=tmp_path)[1]["types"]["runbook"]["folders"] == ["runbooks"]
    before = (tmp_path / "tropo.toml").read_bytes()
    code, _, err = tropo("init", str(tmp_path))
    assert code == 1 and "already exists" in err
    assert (tmp_path / "tropo.toml").read_bytes() == before
    code, _, err = tropo("init", str(tmp_path / "other"), "--packs", "nope")
    assert code == 2 and "unknown pack" in err and not (tmp_path / "other").exists()


NOISY = "---\n# a comment stays\nid: jeff   \nrelationship: self\ntitle: Jeff\ntags:\n  - a\n---\n# Jeff\nbody\n"


def test_fix_removes_only_the_noise(tmp_path: Path) -> None:
    make_vault(tmp_path, {"people/jeff.md": NOISY})
    code, out = tropo_json("fix", "--dry-run", cwd=tmp_path)
    assert out == {"fixed": 1, "dry_run": True, "changes": [{"path": "people/jeff.md", "removed": ["id", "title"]}]}
    assert (tmp_path / "people/jeff.md").read_text() == NOISY
    code, out = tropo_json("fix", cwd=tmp_path)
    assert code == 0 and out["fixed"] == 1
    assert (tmp_path / "people/jeff.md").read_text() == (
        "---\n# a comment stays\nrelationship: self\ntags:\n  - a\n---\n# Jeff\nbody\n")
    assert tropo_json("check", cwd=tmp_path)[0] == 0


def test_fix_drops_an_emptied_block(tmp_path: Path) -> None:
    make_vault(tmp_path, {"nodes/x.md": "---\nid: x\n---\n\n# X\n",
                          "tropo.toml": '[base]\nderive = ["id"]\n' + CHAIN})
    tropo("fix", cwd=tmp_path)
    assert (tmp_path / "nodes/x.md").read_text() == "# X\n"


def test_help_has_examples() -> None:
    proc = tropo_cli("check", "--help", cwd=Path.cwd())
    assert proc.returncode == 0 and "Examples:" in proc.stdout and "--staged" in proc.stdout


@pytest.mark.parametrize("args", [["--bogus"], ["blast"], ["blast", "x", "--depth", "0"]])
def test_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    make_vault(tmp_path)
    proc = tropo_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_bare_tropo_runs_check(tmp_path: Path) -> None:
    make_vault(tmp_path, {"meetings/x.md": "---\ndate: nope\n---\n"})
    proc = tropo_cli(cwd=tmp_path)
    assert proc.returncode == 1 and "E103" in proc.stdout


def test_graph_and_blast_json_stream_the_bytes_json_dumps_wrote(tmp_path: Path) -> None:
    """`tropo graph --json` and `blast --json` write their documents in pieces; the bytes
    are the ones `json.dumps(indent=2, ensure_ascii=False)` gives the whole document (an
    untyped node, broken refs, text that is not ASCII; and an empty graph)."""
    _chain(tmp_path)
    write_files(tmp_path, {"nodes/café ü.md": "---\nrelated: [gone, \"a\\u2028\"]\n---\n# Ü\n",
                           "loose.md": "# untyped\n"})
    empty = tmp_path / "empty"
    write_files(empty, {"tropo.toml": CHAIN})
    for root, broken in ((tmp_path, 2), (empty, 0)):
        ws = open_workspace(root)
        g = ws.graph()
        assert g.broken == broken
        whole = json.dumps(reports.graph(str(ws.root), g), indent=2, ensure_ascii=False) + "\n"
        proc = tropo_cli("graph", "--json", cwd=root)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == whole
    ws = open_workspace(tmp_path)
    for depth in (None, 1):
        whole = json.dumps(reports.blast(ws, ws.graph(), "d", depth), indent=2, ensure_ascii=False) + "\n"
        proc = tropo_cli("blast", "d", "--json", *(["--depth", "1"] if depth else []), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == whole


names = st.text(max_size=6)


@given(st.lists(st.tuples(names, st.one_of(st.none(), names), names), max_size=6),
       st.lists(st.tuples(names, names, names, st.booleans()), max_size=6), names)
def test_graph_text_is_json_dumps_of_the_graph_document(
        nodes: list[tuple[str, str | None, str]], edges: list[tuple[str, str, str, bool]],
        root: str) -> None:
    g = Graph({i: Node(i, t, p, "", {}) for i, t, p in nodes}, [Edge(*e) for e in edges])
    assert "".join(reports.graph_text(root, g)) == json.dumps(reports.graph(root, g), indent=2,
                                                              ensure_ascii=False)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), names)


@given(st.dictionaries(names, st.one_of(scalars, st.dictionaries(names, scalars, max_size=3),
                                        st.lists(st.dictionaries(names, scalars, max_size=3), max_size=3))))
def test_pieces_are_json_dumps_of_a_document_of_flat_objects(document: dict[str, Any]) -> None:
    assert "".join(reports.pieces(document)) == json.dumps(document, indent=2, ensure_ascii=False)
