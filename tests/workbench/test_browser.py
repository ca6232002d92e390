"""The workbench in real headless Chromium (Playwright driving the system browser): a
run waiting at a gate appears live and is approved from the page, the decision is the
person's in the run's audit; demo mode and its static export render with no
repository; the page says when the server dies and picks up again after a restart. No
console errors on the way. The screenshots are docs/workbench.md's: every run takes them,
into a temporary folder unless ``VIVARY_SCREENSHOTS`` names one (``VIVARY_SCREENSHOTS=docs/img``
refreshes the docs' copies), so a test run never dirties the tracked tree."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import pytest

from strato.runs.cli.lanes import lanes_view
from strato.runs.service import Runs
from tests.support.browser import Watched
from tests.support.repos import commit_all, git, write_files
from tests.support.serving import (
    BIN,
    SPEC,
    Server,
    judged_run,
    judged_workspace,
    plan_waiting,
    serving,
    start,
)

pytestmark = pytest.mark.slow  # the slow tier (browser tests): -m "not slow" leaves it out

UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _workspace(tmp: Path) -> Path:
    ws = tmp / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    write_files(ws, {"flow.yaml": SPEC})
    commit_all(ws)
    return ws


def test_a_gate_appears_live_is_approved_from_the_page_and_audited_as_a_person(
        watched: Watched, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with serving("--root", str(ws)) as server:
        page = watched.page
        page.goto(server.url)
        page.wait_for_selector("#conn[data-state=live]")
        assert "token" not in page.url  # taken out of the address bar at once
        assert page.evaluate("sessionStorage.getItem('vivary-token')") == server.token
        assert page.locator("main table").inner_text().count("none") == 1
        plan_waiting(ws, "r1")  # a run arrives while the page is open: the stream says so
        row = page.locator("tr[data-run=r1]")
        row.wait_for()
        assert "gate review" in row.inner_text()
        assert UTC.fullmatch(row.locator("td").last.inner_text())  # one convention: UTC, as every view
        watched.shot("runs")
        row.locator("a").click()
        gate = page.locator("[data-gate=review]")
        gate.wait_for()
        shown = page.locator("main").inner_text()
        assert "failed" in shown and "retried" in shown  # the rejected first attempt and its resolution
        assert '"text": "bees are busy"' in gate.locator("[data-subject=draft]").inner_text()  # not approved blind
        assert all(UTC.fullmatch(t) for t in page.locator("td.muted").all_inner_texts() if t[:1].isdigit())
        assert "task " in shown  # the dispatch's context loads, in estimated tokens
        gate.locator("textarea").fill("reads well, ship it")
        watched.shot("gate")
        gate.locator("button[data-decision=approve]").click()
        page.wait_for_selector("h2 .badge.completed")
        watched.shot("run")
        assert "token" not in page.url
    resolved = [e for e in Runs(ws).audit("r1")["events"] if e["type"] == "gate_resolved"]
    assert [e["detail"] for e in resolved] == [{"decision": "approve", "target": None, "resolvedBy": "human",
                                                "note": "reads well, ship it"}]
    assert watched.errors == []
    origin = f"http://127.0.0.1:{server.port}/"
    assert [u for u in watched.requested if not u.startswith(origin) and not u.startswith("data:")] == []
    assert not any("token=" in u for u in watched.requested[1:])  # only the URL first opened had it


def test_demo_mode_renders_every_view_with_no_repository(watched: Watched, tmp_path: Path) -> None:
    with serving("--demo", cwd=tmp_path) as server:  # tmp_path is no repository
        page = watched.page
        page.goto(server.url)
        page.wait_for_selector("tr[data-run=demo-note]")
        assert page.locator("#demo-banner").is_visible()
        watched.shot("demo")
        for tab, seen in (("board", "local-ci-baseline"), ("guard", "release:1.0"), ("heartbeat", "playbook"),
                          ("lanes", "verification rate"), ("runs/demo-note", "Steps and attempts"),
                          ("evals", "judged.stratum.yaml"), ("compare/bare/judged", "Flipped tasks")):
            page.goto(f"http://127.0.0.1:{server.port}/#/{tab}")
            page.wait_for_function("(s) => document.querySelector('main').innerText.includes(s)", arg=seen)
            assert page.locator("main .demo-label").inner_text() == "DEMO DATA", tab
            buttons = page.locator("main button[data-decision]")
            assert all(buttons.nth(i).is_disabled() for i in range(buttons.count()))
        page.goto(f"http://127.0.0.1:{server.port}/#/graph")
        frame = page.frame_locator("iframe.graph")
        frame.locator("#sigma canvas").first.wait_for()  # tropo view's own script ran in the frame
        graph = next(f for f in page.frames if f != page.main_frame)
        graph.wait_for_function("window.tropoView !== undefined")
        assert graph.evaluate("tropoView.nodes.length") >= 5
        assert graph.evaluate("tropoView.renderer.getNodeDisplayedLabels().size") >= 1  # sigma drew
        watched.shot("graph")
        assert server.post("/api/runs/demo-note/gates/review", {"decision": "approve", "gateToken": "x"}).status == 403
    assert watched.errors == []


def test_the_static_export_opens_from_disk(watched: Watched, tmp_path: Path) -> None:
    out = tmp_path / "site"
    proc = subprocess.run([str(BIN / "vivary"), "serve", "--export-demo", str(out)], capture_output=True,
                          text=True, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    watched.page.goto((out / "index.html").as_uri())
    watched.page.wait_for_selector("tr[data-run=demo-note]")
    assert watched.page.locator("#conn").inner_text() == "static export"
    assert watched.page.locator("main .demo-label").inner_text() == "DEMO DATA"
    watched.page.goto((out / "index.html").as_uri() + "#/runs/demo-note")
    watched.page.wait_for_selector("text=Steps and attempts")
    assert watched.errors == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_page_says_when_the_server_dies_and_picks_up_after_a_restart(
        watched: Watched, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    plan_waiting(ws, "r1")
    port = _free_port()
    server: Server = start("--root", str(ws), "--port", str(port))
    page = watched.page
    try:
        page.goto(server.url)
        page.wait_for_selector("tr[data-run=r1]")
        page.wait_for_selector("#conn[data-state=live]")
        server.stop()  # kill -9 while the page is connected
        page.wait_for_selector("#conn[data-state=disconnected]")
        assert "Disconnected" in page.locator("#notice").inner_text()
        watched.shot("disconnected")
        server = start("--root", str(ws), "--port", str(port))  # back, with a new token
        page.wait_for_selector("#notice input")  # the old token is refused: the page asks for the new URL
        page.locator("#notice input").fill(server.url)
        page.locator("#notice button").click()
        page.wait_for_selector("#conn[data-state=live]")
        page.wait_for_selector("tr[data-run=r1]")
        Runs(ws).gate("r1", "review", "approve", resolved_by="human", via="terminal")
        page.wait_for_selector("tr[data-run=r1] .badge.completed")  # live again
    finally:
        server.stop()
    # the browser logs each request that failed while the server was down (the cut
    # stream, refused connections, the old token's 401); nothing else went wrong
    assert [e for e in watched.errors if not e.startswith("Failed to load resource")] == []


def test_the_lanes_view_shows_each_lanes_streak_and_rate(watched: Watched, tmp_path: Path) -> None:
    ws = judged_workspace(tmp_path / "ws")
    for n, text in enumerate(("kind words", "more kind words", "RUDE words", "kind again")):
        judged_run(ws, f"j{n}", text)  # the third fails its judge: the lane resets
    expected = lanes_view(ws)["lanes"]
    [lane] = expected
    with serving("--root", str(ws)) as server:
        page = watched.page
        page.goto(server.url + "#/lanes")
        row = page.locator(f"tr[data-lane='{lane['lane']}']")
        row.wait_for()
        cells = row.locator("td").all_inner_texts()
        assert cells[:5] == [lane["flow"], lane["step"], lane["agent"], str(lane["clean"]),
                             f"{round(lane['rate'] * 1000) / 10:g}%"]
        assert cells[5:] == [str(lane["verified"]), str(lane["skipped"]), str(lane["failures"]),
                             str(lane["lastReset"])]
        assert lane["failures"] == 1 and lane["clean"] == 1
        watched.shot("lanes")
        page.goto(f"http://127.0.0.1:{server.port}/#/runs/j2")  # the judged check that failed
        page.wait_for_function("() => document.querySelector('main').innerText.includes('Judged')")
        judged = page.locator("main table").nth(1).inner_text()
        assert "judged" in judged and "verified" in judged
    assert watched.errors == []


def test_an_open_run_follows_its_ref_when_someone_else_decides(watched: Watched, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    plan_waiting(ws, "r1")
    with serving("--root", str(ws)) as server:
        page = watched.page
        page.goto(server.url + "#/runs/r1")
        page.locator("[data-gate=review]").wait_for()
        Runs(ws).gate("r1", "review", "revise", note="from the terminal", resolved_by="human", via="terminal")
        page.locator("[data-gate=review]").wait_for(state="detached")  # the gate moved on: its buttons go
        page.wait_for_function("() => document.querySelector('main').innerText.includes('step_reset')")
        shown = page.locator("main").inner_text()
        assert "gate_resolved" in shown and '"resolvedBy":"human"' in shown and "from the terminal" in shown
    assert watched.errors == []
