"""`tropo view`'s page is usable at 20,000 nodes: measured in a real Chromium (Playwright).

For each generated graph (``bench.generate``: 3k, 5k and 20k nodes by default) it times,
medians of ``--runs`` fresh page loads, with the machine's load average beside them:

- the page's data: ``page_data`` cold (layout computed) and warm (layout read from the
  cache), CPU seconds, and the page's size;
- first useful paint: navigation start to the first frame sigma draws (the page's
  ``tropo-view:drawn`` mark);
- search-to-focus: typing an id into the search box and Enter, to the frame after the
  focus is drawn (ten ids, in-page ``performance.now()``), and of that the script's part
  (the input and the keydown handled, before any frame);
- panning: a mouse drag across the graph with every node expanded, the longest and the
  95th-percentile frame interval (``requestAnimationFrame`` timestamps) and how many
  nodes were on screen;
- beside each, the CPU the browser's processes spent (all of them: the page's, the GPU
  process drawing WebGL in software, and Playwright's driver), per search and per frame,
  which a loaded machine inflates less than the wall time.

Baseline in the same run: the page before sigma (the SVG one, main's ``view.html``,
filled with the same data), its first paint, with a 60 s cap.

    nice -n 19 python -m bench.graph_view --sizes 3000 5000 20000 --runs 3
    python -m bench.graph_view --sizes 3000 5000    # the quick one (graphs kept in --where)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright

from bench import generate
from tests.support.browser import ARGS, CHROMIUM  # the browser the tests drive, started alike
from tropo.check.graph import Graph
from tropo.git.repo import require
from tropo.review import view
from tropo.review.layout_cache import LayoutCache

SEARCH_IDS = 10
DRAG_STEPS = 120


def graph_of(root: Path, nodes: int) -> Graph:
    """The generated workspace's graph (generated if ``root`` is missing)."""
    if not root.exists():
        generate.build(root, nodes)
    from exo.workspace import load_worktree

    return load_worktree(root).graph


def data_times(root: Path, g: Graph, runs: int) -> dict[str, float]:
    """page_data's CPU seconds without a layout cache and with a warm one."""
    cache = LayoutCache(require(root))
    cold, warm = [], []
    for _ in range(runs):
        t = time.process_time()
        view.page_data("graph", g)
        cold.append(time.process_time() - t)
    view.page_data("graph", g, layouts=cache)
    for _ in range(runs):
        t = time.process_time()
        view.page_data("graph", g, layouts=cache)
        warm.append(time.process_time() - t)
    return {"cold": statistics.median(cold), "warm": statistics.median(warm)}


def well_linked(data: dict[str, Any]) -> str:
    """The node a screenshot focuses: one with about eight neighbours."""
    degree = [0] * len(data["nodes"])
    for s, _, d, _ in data["edges"]:
        degree[s] += 1
        degree[d] += 1
    best = min((i for i, n in enumerate(data["nodes"]) if not n.get("ghost") and 4 <= degree[i] <= 30),
               key=lambda i: (abs(degree[i] - 8), i))
    node_id: str = data["nodes"][best]["id"]
    return node_id


def first_paint(page: Page, html: Path, mark: str | None) -> float:
    """Seconds from navigation start to the page's first drawn frame (its mark), or to the
    load event plus one frame for a page without one."""
    page.goto(html.as_uri(), timeout=60_000)
    if mark is None:
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        return float(page.evaluate("performance.now()")) / 1000
    page.wait_for_function(f"performance.getEntriesByName('{mark}').length > 0", timeout=60_000)
    return float(page.evaluate(f"performance.getEntriesByName('{mark}')[0].startTime")) / 1000


SEARCH = """async (ids) => {
  const box = document.getElementById('search'), out = [];
  for (const id of ids) {
    const t = performance.now();
    box.value = id; box.dispatchEvent(new Event('input'));
    box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    const script = performance.now() - t;
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    if (tropoView.nodes[tropoView.state.centre].id !== id) throw new Error('focused the wrong node');
    out.push([performance.now() - t, script]);
    box.value = ''; box.dispatchEvent(new Event('input'));
  }
  return out;
}"""

FRAMES = """() => { window.frames_ = [];
  const tick = t => { window.frames_.push(t); if (window.framesOn) requestAnimationFrame(tick); };
  window.framesOn = true; requestAnimationFrame(tick); }"""
ON_SCREEN = """(() => { const v = tropoView, r = v.renderer, w = r.getDimensions();
  return v.graph.filterNodes(k => { const d = r.getNodeDisplayData(k); if (!d || d.hidden) return false;
    const p = r.framedGraphToViewport(d); return p.x >= 0 && p.y >= 0 && p.x <= w.width && p.y <= w.height; })
  .length; })()"""
FOCUS = "id => tropoView.select(tropoView.nodes.findIndex(n => n.id === id), true)"
UNFOCUS = "() => tropoView.clear()"


def browser_cpu() -> float:
    """CPU seconds spent so far by this process's descendants (the browser's processes and
    Playwright's driver), read from /proc: Linux only."""
    parent: dict[int, int] = {}
    spent: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after the command's name, which may hold spaces
        parent[int(entry.name)] = int(fields[1])
        spent[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    ours, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        for child in (c for c, p in parent.items() if p == pid):
            ours += spent[child]
            todo.append(child)
    return ours


def pan(page: Page) -> dict[str, float]:
    """Expand every type, then drag across the graph: frame intervals while panning, and
    the browser's CPU per frame."""
    page.evaluate("""() => { const v = tropoView; for (const t of [...v.state.collapsed]) v.toggle(t);
        v.renderer.getCamera().setState({ x: 0.5, y: 0.5, ratio: 1 }); }""")
    page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    visible = page.evaluate(ON_SCREEN)
    cpu = browser_cpu()
    page.evaluate(FRAMES)
    page.mouse.move(300, 400)
    page.mouse.down()
    for i in range(DRAG_STEPS):
        page.mouse.move(300 + 3 * i, 400 + (i % 20))
    page.mouse.up()
    page.evaluate("new Promise(r => setTimeout(r, 200))")
    page.evaluate("window.framesOn = false")
    stamps: list[float] = page.evaluate("window.frames_")
    cpu = browser_cpu() - cpu
    gaps = sorted(b - a for a, b in itertools.pairwise(stamps))
    return {"visible": visible, "max_ms": gaps[-1], "p95_ms": gaps[int(0.95 * (len(gaps) - 1))],
            "median_ms": statistics.median(gaps), "cpu_ms_per_frame": 1000 * cpu / len(gaps)}


def shot(page: Page, html: Path | None, data: dict[str, Any], shots: Path, size: int) -> None:
    """A screenshot of the page (opened from ``html`` unless it is open) with one
    well-linked node focused: what docs/workbench.md shows."""
    if html is not None:
        first_paint(page, html, "tropo-view:drawn")
    page.evaluate(FOCUS, well_linked(data))
    page.evaluate("new Promise(r => setTimeout(r, 300))")
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / f"graph-{size}.png"))


def run_once(browser: Browser, html: Path, ids: list[str], data: dict[str, Any], shots: Path | None,
             size: int) -> dict[str, Any]:
    """One fresh page load of ``html``: its first paint, each search's [wall, script] ms,
    the browser's CPU ms per search, and panning (a screenshot first, into ``shots``)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    paint = first_paint(page, html, "tropo-view:drawn")
    cpu = browser_cpu()
    searches = page.evaluate(SEARCH, ids)
    cpu = 1000 * (browser_cpu() - cpu) / len(ids)
    if shots is not None:
        shot(page, None, data, shots, size)
        page.evaluate(UNFOCUS)
    panned = pan(page)
    context.close()
    return {"paint": paint, "searches": searches, "search_cpu": cpu, "pan": panned}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over runs (the longest search's time beside them)."""
    walls = [wall for r in runs for wall, _ in r["searches"]]
    scripts = [script for r in runs for _, script in r["searches"]]
    return {"first_paint_s": statistics.median(r["paint"] for r in runs),
            "search_to_focus_ms": {"median": statistics.median(walls), "max": max(walls),
                                   "script_median": statistics.median(scripts),
                                   "cpu_per_search": statistics.median(r["search_cpu"] for r in runs)},
            "pan": {k: statistics.median(r["pan"][k] for r in runs) for k in runs[0]["pan"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 5000, 20000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--where", type=Path, default=Path(tempfile.gettempdir()) / "graph-view-bench")
    parser.add_argument("--baseline", action="store_true", help="also time the SVG page before sigma")
    parser.add_argument("--before", metavar="REV", help="also measure view.html as it was at REV (the same "
                        "data, runs alternating with this page's), e.g. --before main")
    parser.add_argument("--shots", type=Path, help="write a screenshot per size (focused) here")
    parser.add_argument("--only-shots", action="store_true", help="take the screenshots, measure nothing")
    args = parser.parse_args()
    old = subprocess.run(["git", "show", "7156f97:tropo/review/view.html"], capture_output=True, text=True,
                         check=False).stdout if args.baseline else ""
    before = view.inline_vendored(subprocess.run(
        ["git", "show", f"{args.before}:tropo/review/view.html"], capture_output=True, text=True,
        check=True).stdout) if args.before else ""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for size in args.sizes:
            root = args.where / f"g{size}"
            cached = args.where / f"g{size}.graph"
            g = pickle.loads(cached.read_bytes()) if cached.exists() else graph_of(root, size)
            cached.write_bytes(pickle.dumps(g))
            data = view.page_data("graph", g)
            html = args.where / f"g{size}.html"
            html.write_text(view.render(data))
            if args.only_shots:
                shot(browser.new_context(viewport={"width": 1280, "height": 800}).new_page(), html, data,
                     args.shots or Path("."), size)
                continue
            row: dict[str, Any] = {"nodes": len(g.nodes), "edges": len(g.edges), "load": os.getloadavg()[0]}
            row["page_data_cpu_s"] = data_times(root, g, args.runs)
            row["page_mb"] = round(html.stat().st_size / 1e6, 1)
            real = [n["id"] for n in data["nodes"] if not n.get("ghost")]
            ids = real[:: max(1, len(real) // SEARCH_IDS)][:SEARCH_IDS]
            old_page = args.where / f"g{size}-before.html"
            if before:
                old_page.write_text(view.render(data, before))
            runs, runs_before = [], []
            for k in range(args.runs):
                runs.append(run_once(browser, html, ids, data, args.shots if k == 0 else None, size))
                if before:
                    runs_before.append(run_once(browser, old_page, ids, data, None, size))
            row |= summary(runs)
            if before:
                row["before"] = {"rev": args.before, **summary(runs_before)}
            if args.baseline:
                baseline = args.where / f"g{size}-svg.html"
                baseline.write_text(old.replace("__TITLE__", "graph").replace(
                    "__DATA__", json.dumps(data, sort_keys=True, default=str).replace("<", "\\u003c")))
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                try:
                    row["svg_first_paint_s"] = first_paint(context.new_page(), baseline, None)
                except Exception as exc:  # the old page timing out is the finding
                    row["svg_first_paint_s"] = f"none in 60 s ({type(exc).__name__})"
                context.close()
            row["load_after"] = os.getloadavg()[0]
            print(json.dumps(row), flush=True)
        browser.close()


if __name__ == "__main__":
    main()
