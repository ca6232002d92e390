"""tropo view: the page in headless Chromium (driven over the DevTools protocol) and the
refusals of --out; tropo map against vivary-tropo."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.generate import build
from bench.graph_view import well_linked
from exo.workspace import load_worktree
from tests.support.cdp import Page, find_chromium
from tests.support.repos import commit_all, git, write_files
from tests.support.requirements import missing
from tests.support.vaults import make_vault, tropo, tropo_cli, tropo_json
from tropo.review import view


@pytest.fixture
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    exe = find_chromium()
    if exe is None:
        missing("NO BROWSER: install Debian's `chromium` (.ci/run does) to run the view tests")
    p = Page(exe, tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield p
    finally:
        p.close()


def _open(page: Page, html: Path) -> None:
    page.call("Page.navigate", url=html.as_uri())
    page.wait_for("Page.loadEventFired")


def _big_workspace(root: Path, nodes: int, hub_refs: int) -> None:
    """``nodes`` notes in three types; ``hub_refs`` of them ref one hub (plus one broken ref)."""
    config = ('version = 1\n[base]\nderive = ["id", "title"]\n'
              '[types.hub]\nfolder = "hubs"\n'
              '[types.note]\nfolder = "notes"\noptional = { about = "ref-list" }\n'
              '[types.task]\nfolder = "tasks"\noptional = { about = "ref-list" }\n')
    files = {"tropo.toml": config, "hubs/the-hub.md": "# The hub\n"}
    for i in range(nodes - 1):
        folder = "notes" if i % 2 else "tasks"
        refs = ["the-hub"] if i < hub_refs else []
        if i == 0:
            refs.append("missing-target")
        files[f"{folder}/n{i:05d}-a-rather-long-note-name.md"] = \
            f"---\nabout: [{', '.join(refs)}]\n---\n# Note {i}\n"
    write_files(root, files)


FRAME = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"  # sigma drew
# Where node K is on the screen.
AT = """((k) => { const v = tropoView, p = v.renderer.graphToViewport(v.graph.getNodeAttributes(k)),
    r = document.getElementById('sigma').getBoundingClientRect(); return [r.left + p.x, r.top + p.y]; })"""
LABELS = "[...tropoView.labelled.keys()].map(Number)"  # the labels drawn in the last frame
LABEL_BOXES = "[...tropoView.labelled.values()]"  # and their boxes on the screen
# Edges sigma holds but does not show: it would still draw each (in software, most of a frame).
HIDDEN_EDGES = "tropoView.graph.filterEdges(k => tropoView.renderer.getEdgeDisplayData(k).hidden).length"


def _overlaps(boxes: list[list[float]]) -> int:
    return sum(1 for i, a in enumerate(boxes) for b in boxes[i + 1:]
               if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])


def _index(page: Page, node_id: str) -> str:
    key: str = page.evaluate(f"String(tropoView.nodes.findIndex(n => n.id === {json.dumps(node_id)}))")
    return key


@pytest.mark.slow  # a browser test
def test_view_draws_every_node_and_clicks(repo_dir: Path, page: Page) -> None:
    _big_workspace(repo_dir, 500, 120)
    commit_all(repo_dir)
    code, out = tropo_json("graph", cwd=repo_dir)
    assert out["counts"]["nodes"] == 500
    code, _, err = tropo("view", "--out", str(repo_dir / "graph.html"), cwd=repo_dir)
    assert code == 0, err
    html = (repo_dir / "graph.html").read_text()
    assert "http://" not in html and "https://" not in html  # sigma and graphology inlined
    assert '<script src=' not in html
    _open(page, repo_dir / "graph.html")
    page.evaluate(FRAME)
    # Every node is drawn (sigma's display data, not hidden), the broken target as a ghost.
    drawn = page.evaluate("""(() => { const v = tropoView; return v.graph.filterNodes(k => !k.startsWith('type:'))
        .filter(k => !v.renderer.getNodeDisplayData(k).hidden).map(k => v.nodes[+k].ghost ? 'ghost' : 'node'); })()""")
    assert (drawn.count("node"), drawn.count("ghost")) == (500, 1)  # missing-target
    assert "note" in page.evaluate("document.getElementById('legend').textContent")
    assert page.evaluate("""tropoView.graph.filterEdges(k => !k.startsWith('types:'))
        .filter(k => tropoView.renderer.getEdgeDisplayData(k).color === '#d6455a').length""") == 1
    # Every edge is an arrow from the document to the one it refs.
    assert page.evaluate("""tropoView.graph.filterEdges(k => !k.startsWith('types:')).every(k =>
        tropoView.renderer.getEdgeDisplayData(k).type === 'arrow' && !tropoView.renderer.getEdgeDisplayData(k).hidden)""")
    assert page.evaluate("tropoView.graph.filterEdges(k => !k.startsWith('types:')).length") == 121
    # On load the whole graph fits the window; sigma's label grid draws some labels, apart.
    inside = page.evaluate(f"""(() => {{ const r = document.getElementById('sigma').getBoundingClientRect();
        return tropoView.graph.filterNodes(k => !k.startsWith('type:')).every(k => {{ const [x, y] = {AT}(k);
        return x >= r.left && x <= r.right && y >= r.top && y <= r.bottom; }}); }})()""")
    assert inside
    boxes = page.evaluate(LABEL_BOXES)
    assert len(boxes) >= 5 and _overlaps(boxes) == 0
    # Hovering an edge (a real mouse move over its middle) names its field.
    a, b = page.evaluate(f"""(() => {{ const v = tropoView, k = v.graph.filterEdges(k => !k.startsWith('types:'))
        .find(k => !v.graph.getEdgeAttributes(k).color.startsWith('#d6'));
        return [{AT}(v.graph.source(k)), {AT}(v.graph.target(k))]; }})()""")
    page.call("Input.dispatchMouseEvent", type="mouseMoved", x=(a[0] + b[0]) / 2, y=(a[1] + b[1]) / 2)
    page.evaluate(FRAME)
    assert page.evaluate("getComputedStyle(document.getElementById('tip')).display") == "block"
    assert page.evaluate("document.getElementById('tip').textContent").endswith(" —about→ the-hub")
    # A real mouse click on the hub focuses its neighbourhood: its 120 inbound neighbours
    # stay, everything else fades, and the labels drawn are the neighbourhood's, apart.
    hub = _index(page, "the-hub")
    page.call("Input.dispatchMouseEvent", type="mouseMoved", x=5, y=5)
    page.click(*page.evaluate(f"{AT}('{hub}')"))
    page.evaluate(FRAME)
    assert page.evaluate("document.getElementById('selected-id').textContent") == "the-hub"
    assert "inbound (120)" in page.evaluate("document.getElementById('panel').textContent")
    assert page.evaluate("tropoView.state.near.size") == 121
    assert page.evaluate("tropoView.state.focusEdges.size") == 120
    assert page.evaluate("""tropoView.graph.filterEdges(k => !k.startsWith('types:'))
        .filter(k => !tropoView.renderer.getEdgeDisplayData(k).hidden).length""") == 120
    faded = page.evaluate("""tropoView.graph.filterNodes(k => !k.startsWith('type:') && !tropoView.state.near.has(+k))
        .map(k => tropoView.renderer.getNodeDisplayData(k).color)""")
    assert len(faded) == 380 and set(faded) == {"#e3e7ee"}
    labelled = page.evaluate(LABELS)
    near = set(page.evaluate("[...tropoView.state.near]"))
    assert int(hub) in labelled and set(labelled) <= near and len(labelled) >= 5
    assert _overlaps(page.evaluate(LABEL_BOXES)) == 0
    # Zooming in makes room: more of the neighbourhood is labelled, still apart.
    page.evaluate("""void (() => { const v = tropoView, d = [...v.state.near].map(k => v.renderer.getNodeDisplayData(String(k)));
        v.renderer.getCamera().setState({ ratio: 0.3, x: d.reduce((s, p) => s + p.x, 0) / d.length,
                                          y: d.reduce((s, p) => s + p.y, 0) / d.length }); })()""")
    page.evaluate(FRAME)
    closer = page.evaluate(LABELS)
    assert set(closer) <= near and len(closer) > len(labelled) and _overlaps(page.evaluate(LABEL_BOXES)) == 0
    # A click on the background clears the focus.
    page.evaluate("void tropoView.renderer.getCamera().setState({ratio: 1, x: 0.5, y: 0.5})")
    page.evaluate("new Promise(r => setTimeout(r, 400))")  # two clicks closer are a double click
    spot = page.evaluate("(() => { const r = document.getElementById('sigma').getBoundingClientRect(); "
                         "return [r.right - 20, r.bottom - 10]; })()")
    page.call("Input.dispatchMouseEvent", type="mouseMoved", x=spot[0], y=spot[1])
    page.click(*spot)
    page.evaluate(FRAME)
    assert page.evaluate("tropoView.state.near.size") == 0
    assert page.evaluate("tropoView.state.centre") is None
    # Wheel zoom and drag pan move the camera.
    before = page.evaluate("JSON.stringify(tropoView.renderer.getCamera().getState())")
    page.call("Input.dispatchMouseEvent", type="mouseWheel", x=400, y=300, deltaX=0, deltaY=-120)
    page.evaluate("new Promise(r => setTimeout(r, 400))")
    assert page.evaluate("JSON.stringify(tropoView.renderer.getCamera().getState())") != before
    assert page.errors() == []


@pytest.mark.slow  # a browser test
def test_view_hub_with_10k_edges_stays_usable(repo_dir: Path, page: Page) -> None:
    _big_workspace(repo_dir, 10_001, 10_000)
    commit_all(repo_dir)
    code, _, err = tropo("view", "blast", "the-hub", "--out", str(repo_dir / "hub.html"), cwd=repo_dir)
    assert code == 0, err
    _open(page, repo_dir / "hub.html")
    page.evaluate(FRAME)
    assert page.evaluate("tropoView.nodes.filter(n => !n.ghost).length") == 10_001
    # Above 5,000 nodes each type opens collapsed into one node with its count.
    clusters = page.evaluate("""tropoView.graph.filterNodes(k => k.startsWith('type:'))
        .filter(k => !tropoView.renderer.getNodeDisplayData(k).hidden).map(k => tropoView.graph.getNodeAttribute(k, 'label'))""")
    assert sorted(clusters) == ["(broken) (1)", "hub (1)", "note (5000)", "task (5000)"]
    # Drawn on the GPU: a handful of canvases, not an element per node or edge.
    assert page.evaluate("document.querySelectorAll('svg, path, circle').length") == 0
    assert page.evaluate("document.querySelectorAll('canvas').length") <= 8  # sigma's layers
    # Searching by id focuses the hub through the collapsed clusters.
    page.call("Runtime.evaluate", expression="document.getElementById('search').focus()")
    page.call("Input.insertText", text="the-hub")
    page.call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter", windowsVirtualKeyCode=13)
    page.evaluate(FRAME)
    assert page.evaluate("document.getElementById('selected-id').textContent") == "the-hub"
    assert page.evaluate("document.querySelectorAll('#panel li').length") <= 202
    assert "inbound (10000)" in page.evaluate("document.getElementById('panel').textContent")
    assert page.evaluate(f"tropoView.renderer.getNodeDisplayData('{_index(page, 'the-hub')}').hidden") is False
    assert page.errors() == []


@pytest.mark.slow  # a browser test
def test_view_search_puts_the_exact_id_first_however_many_titles_match(repo_dir: Path, page: Page) -> None:
    # 40 notes whose titles contain "zebra", ordered before the one task whose id it is.
    config = ('version = 1\n[base]\nderive = ["id", "title"]\n'
              '[types.note]\nfolder = "notes"\n[types.task]\nfolder = "tasks"\n')
    files = {"tropo.toml": config, "tasks/zebra.md": "# Stripes\n"}
    files |= {f"notes/a{i:02d}.md": f"# Zebra crossing {i}\n" for i in range(40)}
    write_files(repo_dir, files)
    commit_all(repo_dir)
    code, _, err = tropo("view", "--out", str(repo_dir / "graph.html"), cwd=repo_dir)
    assert code == 0, err
    _open(page, repo_dir / "graph.html")
    page.evaluate(FRAME)
    page.call("Runtime.evaluate", expression="document.getElementById('search').focus()")
    page.call("Input.insertText", text="ZEBRA")
    listed = page.evaluate("[...document.querySelectorAll('#results li')].map(li => li.firstChild.textContent)")
    assert listed[0] == "zebra" and len(listed) == 30  # the exact id, then titles, capped
    page.call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter", windowsVirtualKeyCode=13)
    page.evaluate(FRAME)
    assert page.evaluate("document.getElementById('selected-id').textContent") == "zebra"
    page.evaluate("void (document.getElementById('search').value = '')")
    page.call("Input.insertText", text="a1")
    listed = page.evaluate("[...document.querySelectorAll('#results li')].map(li => li.firstChild.textContent)")
    assert listed == [f"a1{i}" for i in range(10)]
    assert page.errors() == []


def test_view_out_refusals(repo_dir: Path, tmp_path: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    outside = tmp_path / "outside.html"
    outside.write_text("keep")
    (repo_dir / "link.html").symlink_to(outside)
    (repo_dir / "adir.html").mkdir()
    for out, code in ((str(outside), 1), ("link.html", 1), ("../outside.html", 1), ("adir.html", 2)):
        proc = tropo_cli("view", "--out", out, cwd=repo_dir)
        assert proc.returncode == code and "Traceback" not in proc.stderr, (out, proc.stderr)
    assert outside.read_text() == "keep"
    for args in (["blast"], ["blast", "nope"], ["graph", "jeff"], ["other"]):
        proc = tropo_cli("view", *args, cwd=repo_dir)
        assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
    proc = tropo_cli("view", "blast", "tropo", cwd=repo_dir)
    assert proc.returncode == 0 and proc.stdout.startswith("<!doctype html>")
    assert '"id": "2026-06-12-kickoff"' in proc.stdout and '"id": "jeff"' not in proc.stdout


def test_view_escapes_content(repo_dir: Path) -> None:
    make_vault(repo_dir, {"people/evil.md": "---\nrelationship: \"</script><script>alert(1)</script>\"\n---\n"})
    proc = tropo_cli("view", cwd=repo_dir)
    assert proc.returncode == 0
    assert "<script>alert(1)" not in proc.stdout and proc.stdout.count("</script>") == 4  # data, graphology, sigma, page


def test_map_matches_upstream(tmp_path: Path, upstream: Callable[[str], Path]) -> None:
    exe = upstream("tropo")
    files = {f"src/a/f{i}.py": f"print({i})\n" for i in range(6)}
    files |= {f"docs/d{i}.txt": "x\n" for i in range(5)} | {"docs/README.md": "# Docs\n"}
    files |= {f"node_modules/x/{i}.js": "y\n" for i in range(5)}
    files |= {"lib/deep/er/big.bin": "b" * 100, "tropo.toml": 'version = 1\nexclude = ["lib/deep"]\n'}
    write_files(tmp_path, files)
    (tmp_path / "lib" / "link").symlink_to("/etc")
    for args in ([], ["--depth", "1"], ["--max-entries", "2"]):
        code, ours = tropo_json("map", *args, cwd=tmp_path)
        assert code == 0
        coverage = ours["summary"].pop("index_coverage")
        proc = subprocess.run([str(exe), "map", *args, "--json"], cwd=tmp_path, capture_output=True,
                              text=True, check=False)
        assert ours == json.loads(proc.stdout)
    assert coverage == {"module_dirs": 3, "with_index": 1}
    assert ours["summary"]["likely_modules_without_index"] == ["src", "src/a"]


def test_map_needs_no_config_and_rejects_bad_paths(tmp_path: Path) -> None:
    write_files(tmp_path, {"a/one.md": "x", "a/two.md": "y"})
    code, out = tropo_json("map", cwd=tmp_path)
    assert code == 0 and out["summary"]["total_files"] == 2
    assert tropo_cli("map", "no-such-dir", cwd=tmp_path).returncode == 2
    assert tropo_cli("map", "a", "--root", "a", cwd=tmp_path).returncode == 2


def test_view_out_never_overwrites_what_it_did_not_write(repo_dir: Path) -> None:
    """Issue 13: `--out changes/x.md` replaced a document, `--out .git/config` broke git."""
    make_vault(repo_dir)
    write_files(repo_dir, {"notes/keep.txt": "untracked, not ours\n"})
    commit_all(repo_dir)
    git(repo_dir, "rm", "-q", "--cached", "notes/keep.txt")
    doc = next(p for p in sorted(repo_dir.rglob("*.md")) if ".git" not in p.parts)
    rel = doc.relative_to(repo_dir).as_posix()
    before = {p: (repo_dir / p).read_bytes() for p in (rel, ".git/config", "notes/keep.txt")}
    cases = [(rel, "is a tracked file"), (".git/config", "inside the repository's .git"),
             (".git/new.html", "inside the repository's .git"),
             ("notes/keep.txt", "not a page tropo view wrote"),
             ("missing/dir/graph.html", "the directory")]
    for out, message in cases:
        proc = tropo_cli("view", "--out", out, cwd=repo_dir)
        assert (proc.returncode, message in proc.stderr) == (1, True), (out, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "outside the workspace" not in proc.stderr
    assert not (repo_dir / ".git/new.html").exists() and not (repo_dir / "missing").exists()
    assert {p: (repo_dir / p).read_bytes() for p in before} == before
    # Our own page is rewritten freely; --force overwrites a tracked file, never .git.
    for _ in range(2):
        assert tropo_cli("view", "--out", "graph.html", cwd=repo_dir).returncode == 0
    assert tropo_cli("view", "--out", rel, "--force", cwd=repo_dir).returncode == 0
    assert (repo_dir / rel).read_bytes().startswith(b"<!doctype html>")
    forced = tropo_cli("view", "--out", ".git/config", "--force", cwd=repo_dir)
    assert forced.returncode == 1 and (repo_dir / ".git/config").read_bytes() == before[".git/config"]


def test_view_out_in_a_folder_that_is_not_a_repository(tmp_path: Path) -> None:
    write_files(tmp_path, {"tropo.toml": "version = 1\n", "a.md": "# A\n"})
    assert tropo_cli("view", "--out", "graph.html", cwd=tmp_path).returncode == 0
    proc = tropo_cli("view", "--out", "a.md", cwd=tmp_path)
    assert proc.returncode == 1 and "not a page tropo view wrote" in proc.stderr
    assert (tmp_path / "a.md").read_text() == "# A\n"


@pytest.mark.slow  # a browser test, and up to 20,000 generated documents
@pytest.mark.parametrize("size", [300, 3000, 20_000])
def test_view_at_scale_shows_labels_and_a_focused_neighbourhood(tmp_path: Path, page: Page, size: int) -> None:
    """What the screenshots in docs/workbench.md show, read from the page: labels that fit
    (none overlapping), and after a search a focused neighbourhood, not a smear."""
    build(tmp_path / "ws", size)
    data = view.page_data("graph", load_worktree(tmp_path / "ws").graph)
    (tmp_path / "graph.html").write_text(view.render(data))
    _open(page, tmp_path / "graph.html")
    page.evaluate(FRAME)
    drawn = page.evaluate("[...tropoView.labelled.keys()]")
    assert len(drawn) >= 3 and _overlaps(page.evaluate(LABEL_BOXES)) == 0
    assert page.evaluate(HIDDEN_EDGES) == 0
    if size > 5000:  # opens with each type collapsed: its circle and count are what is labelled
        clusters = page.evaluate("tropoView.graph.filterNodes(k => k.startsWith('type:') && "
                                 "!tropoView.renderer.getNodeDisplayData(k).hidden)")
        assert len(clusters) >= 3 and set(drawn) <= set(clusters)
        assert page.evaluate("tropoView.graph.filterNodes(k => !k.startsWith('type:') && "
                             "!tropoView.renderer.getNodeDisplayData(k).hidden).length") == 0
    target = well_linked(data)  # the node the screenshots focus
    page.call("Runtime.evaluate", expression="document.getElementById('search').focus()")
    page.call("Input.insertText", text=target)
    assert target in page.evaluate("document.getElementById('results').textContent")  # as you type
    page.call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter", windowsVirtualKeyCode=13)
    page.evaluate(FRAME)
    centre = page.evaluate("tropoView.state.centre")
    assert data["nodes"][centre]["id"] == target
    near = set(page.evaluate("[...tropoView.state.near]"))
    labelled = page.evaluate(LABELS)
    assert len(near) >= 5 and centre in labelled and len(labelled) >= 3 and set(labelled) <= near
    assert _overlaps(page.evaluate(LABEL_BOXES)) == 0
    # The neighbourhood is framed on screen; everything else is faded or hidden.
    on_screen = page.evaluate(f"""(() => {{ const r = document.getElementById('sigma').getBoundingClientRect();
        return [...tropoView.state.near].every(k => {{ const [x, y] = {AT}(String(k));
        return x >= r.left && x <= r.right && y >= r.top && y <= r.bottom; }}); }})()""")
    assert on_screen
    rest = page.evaluate("""(() => { const v = tropoView, out = new Set(); v.graph.forEachNode(k => {
        if (k.startsWith('type:') || v.state.near.has(+k)) return; const d = v.renderer.getNodeDisplayData(k);
        out.add(d.hidden ? 'hidden' : d.color); }); return [...out]; })()""")
    assert set(rest) <= {"hidden", "#e3e7ee"}
    assert page.evaluate(HIDDEN_EDGES) == 0
    assert page.errors() == []
