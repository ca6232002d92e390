"""tropo view's layouts, kept by fingerprint under .git/vivary/layouts.v1: computed once,
reused by the next page of the same graph, ignored when malformed, refused through a link.

Who controls the cached bytes: anyone who can write the repository's .git. The adversary
below writes any bytes there; the page still gets a layout of the right shape."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.repos import commit_all, write_files
from tests.support.vaults import make_vault, tropo, tropo_cli
from tropo.check.graph import Edge, Graph, Node
from tropo.git.repo import require
from tropo.review import view
from tropo.review.layout_cache import FOLDER, LayoutCache

DATA = re.compile(r'<script id="data" type="application/json">(.*?)</script>', re.S)


def _page(repo: Path) -> dict[str, Any]:
    code, out, err = tropo("view", cwd=repo)
    assert code == 0, err
    match = DATA.search(out)
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def _cached(repo: Path) -> list[Path]:
    return sorted((repo / ".git" / "vivary" / FOLDER).glob("*.json"))


def test_view_computes_a_layout_once_and_reuses_it(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    first = _page(repo_dir)
    [kept] = _cached(repo_dir)
    # The next page of the same graph reads the kept layout (moved here, so it shows).
    layout = json.loads(kept.read_text())
    layout["pos"] = [[x + 1000, y] for x, y in layout["pos"]]
    kept.write_text(json.dumps(layout))
    again = _page(repo_dir)
    assert [n["x"] for n in again["nodes"]] == [n["x"] + 1000 for n in first["nodes"]]
    # A changed graph gets a layout of its own; the old one stays for the old graph.
    write_files(repo_dir, {"notes/another.md": "# Another\n"})
    changed = _page(repo_dir)
    assert len(changed["nodes"]) == len(first["nodes"]) + 1 and len(_cached(repo_dir)) == 2
    # One of the wrong shape is ignored: the page is what a fresh layout gives.
    for path in _cached(repo_dir):
        path.write_text('{"pos": [[1, 2]], "headers": []}')
    assert _page(repo_dir) == changed
    # --no-cache neither reads nor writes one.
    for path in _cached(repo_dir):
        path.unlink()
    assert tropo("view", "--no-cache", cwd=repo_dir)[0] == 0 and _cached(repo_dir) == []


def test_a_link_planted_for_the_layouts_folder_is_refused(repo_dir: Path, tmp_path: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo_dir / ".git" / "vivary").mkdir(exist_ok=True)
    (repo_dir / ".git" / "vivary" / FOLDER).symlink_to(outside)
    proc = tropo_cli("view", "--out", "graph.html", cwd=repo_dir)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "not a folder of ours" in proc.stderr and "Traceback" not in proc.stderr
    assert list(outside.iterdir()) == [] and not (repo_dir / "graph.html").exists()


def test_a_cached_layout_that_is_a_link_is_not_followed(repo_dir: Path, tmp_path: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    first = _page(repo_dir)
    [kept] = _cached(repo_dir)
    elsewhere = tmp_path / "elsewhere.json"
    layout = json.loads(kept.read_text())
    elsewhere.write_text(json.dumps({**layout, "pos": [[x + 7, y] for x, y in layout["pos"]]}))
    kept.unlink()
    kept.symlink_to(elsewhere)
    assert _page(repo_dir) == first  # not read through the link: computed afresh


GRAPH = Graph({n: Node(n, "note", f"notes/{n}.md", n, {}) for n in "abcd"},
              [Edge("a", "refs", "b", False), Edge("b", "refs", "c", False), Edge("d", "refs", "gone", True)])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=7), inner, max_size=4),
                    max_leaves=30)
SHAPED = st.fixed_dictionaries({"pos": st.lists(st.lists(st.integers() | st.text(max_size=2), min_size=2, max_size=2),
                                                min_size=5, max_size=5), "headers": JSON})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(planted=st.binary(max_size=64) | JSON.map(lambda v: json.dumps(v).encode())
       | SHAPED.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_in_the_cache_give_a_layout_of_the_right_shape(repo_dir: Path, planted: bytes) -> None:
    cache = LayoutCache(require(repo_dir))
    fresh = view.page_data("graph", GRAPH)
    view.page_data("graph", GRAPH, layouts=cache)  # kept
    [kept] = _cached(repo_dir)
    kept.write_bytes(planted)
    data = view.page_data("graph", GRAPH, layouts=cache)
    assert len(data["nodes"]) == 5 and all(type(n["x"]) is int and type(n["y"]) is int for n in data["nodes"])
    assert all(isinstance(h["label"], str) for h in data["headers"])
    assert data["edges"] == fresh["edges"] and [n["id"] for n in data["nodes"]] == [n["id"] for n in fresh["nodes"]]
