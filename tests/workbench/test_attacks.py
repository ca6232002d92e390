"""Attacks on the workbench from the issue 17 review, each against the real `vivary serve`
process (raw sockets, http.client) or real Chromium. The ones that broke the old code:
the demo export writing through a planted symbolic link, `--open` putting the token on
the browser's command line (`ps` shows it to every user), and a header sent twice
(the last one counted). The rest held; they are here where test_guards.py does not
already cover them: Host spellings a rebinding or a sloppy parser could match, an
absolute-form request target, deeply nested and chunked oversized bodies, preflights
and CORS, many event streams, and repository content that tries to run script in the
page or in the graph's frame (runs, items, and evals whose every string is markup)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from strato.evals import store
from strato.runs.service import Runs
from tests.support.browser import Watched
from tests.support.console import run
from tests.support.repos import commit_all, git, write_files
from tests.support.serving import (
    SPEC,
    Server,
    gate_token,
    gated_workspace,
    plan_waiting,
    report_draft,
    serving,
)
from tests.support.workspaces import scaffold
from tropo.git.repo import require


def _raw(server: Server, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request written byte for byte (request line and headers as given)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as conn:
        conn.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


# --- broke before: the export, --open, headers sent twice


def test_the_demo_export_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    site, outside = tmp_path / "site", tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("keep me\n")
    export = ("serve", "--export-demo", str(site))
    assert run("vivary", *export).returncode == 0
    (site / "index.html").unlink()
    (site / "index.html").symlink_to(victim)  # an earlier export, a file swapped for a link
    refused = run("vivary", *export)
    assert refused.returncode == 1 and "symbolic link" in refused.stderr
    assert victim.read_text() == "keep me\n"
    (site / "index.html").unlink()
    for name in os.listdir(site / "assets"):
        (site / "assets" / name).unlink()
    (site / "assets").rmdir()
    (site / "assets").symlink_to(outside)  # a folder swapped for a link
    assert run("vivary", *export).returncode == 1
    assert sorted(os.listdir(outside)) == ["victim"]
    (site / "assets").unlink()
    (site / ".vivary-demo-export").unlink()
    (site / ".vivary-demo-export").symlink_to(victim)  # a linked marker is not our export
    assert run("vivary", *export).returncode == 1
    assert victim.read_text() == "keep me\n"


@pytest.mark.slow  # a browser test
def test_open_gives_the_browser_a_private_file_not_the_token(tmp_path: Path, watched: Watched) -> None:
    ws = gated_workspace(tmp_path / "ws")
    seen = tmp_path / "argv.txt"
    opener = tmp_path / "browser.sh"
    opener.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}\n')
    opener.chmod(0o755)
    with serving("--root", str(ws), "--open", env={**os.environ, "BROWSER": str(opener)}) as server:
        assert server.request("GET", "/api/health").status == 200  # serving: the opener has returned
        argv = seen.read_text()
        assert server.token not in argv  # `ps` shows a browser's command line to every user
        [uri] = argv.split()
        page = Path(uri.removeprefix("file://"))
        assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
        assert server.url in page.read_text()
        watched.page.goto(uri)  # and a real browser gets from the file to the live page
        watched.page.wait_for_selector("#conn[data-state=live]")
        assert "token" not in watched.page.url
        assert watched.page.evaluate("sessionStorage.getItem('vivary-token')") == server.token
        server.proc.send_signal(signal.SIGINT)  # stopped as a person stops it: the file goes too
        server.proc.wait()
    assert not page.parent.exists()


@pytest.mark.parametrize("twice", [
    "Origin: http://evil.example\r\nOrigin: http://127.0.0.1:{port}",
    "Authorization: Bearer nope\r\nAuthorization: Bearer {token}",
    "Sec-Fetch-Site: cross-site\r\nSec-Fetch-Site: same-origin",
])
def test_a_checked_header_sent_twice_is_refused(twice: str) -> None:
    with serving("--demo") as server:
        auth = "" if twice.startswith("Authorization") else f"Authorization: Bearer {server.token}\r\n"
        extra = twice.format(port=server.port, token=server.token)
        status, body = _raw(server, f"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n{auth}"
                                    f"{extra}\r\nConnection: close\r\n")
        assert status == 400 and json.loads(body)["code"] == "duplicate_header"


def _forge(ws: Path, run_id: str, edit: Callable[[str, str], tuple[str, str]]) -> None:
    """A commit on the run's ref written with git plumbing, as any writer of refs can:
    ``edit`` turns (the state as JSON, spec.yaml) into what the forger wants, written in
    the first layout (the state as one top-level run.json), which stays readable."""
    ref = f"refs/vivary/runs/{run_id}/head"
    current = json.dumps(Runs(ws).load(run_id).state)
    state, spec = edit(current, git(ws, "show", f"{ref}:spec.yaml"))
    (ws / "run.json").write_text(state)
    (ws / "spec.yaml").write_text(spec)
    blobs = [git(ws, "hash-object", "-w", name).strip() for name in ("run.json", "spec.yaml")]
    (ws / "run.json").unlink()
    (ws / "spec.yaml").unlink()
    listing = f"100644 blob {blobs[0]}\trun.json\n100644 blob {blobs[1]}\tspec.yaml\n"
    tree = subprocess.run(["git", "mktree"], cwd=ws, input=listing, capture_output=True, text=True,
                          check=True).stdout.strip()
    commit = git(ws, "commit-tree", tree, "-p", ref, "-m", "forged").strip()
    git(ws, "update-ref", ref, commit)


def test_a_forged_run_ref_does_not_take_the_other_runs_down(tmp_path: Path) -> None:
    ws = gated_workspace(tmp_path / "ws", "good")
    plan_waiting(ws, "bad")

    def dotted(state: str, spec: str) -> tuple[str, str]:  # a gate step id that would walk the URL
        doc = json.loads(state)
        doc["scope"]["steps"]["../../good/gates/review"] = doc["scope"]["steps"].pop("review")
        return json.dumps(doc), spec.replace("- id: review", '- id: "../../good/gates/review"')

    _forge(ws, "bad", dotted)
    with serving("--root", str(ws)) as server:
        listed = server.get("/api/runs")
        assert listed.status == 200  # was a 500: one bad ref hid every run and its waiting gate
        rows = {r["runId"]: r for r in listed.json()["runs"]}
        assert rows["good"]["gates"][0]["stepId"] == "review"
        assert rows["bad"]["status"] == "unreadable" and rows["bad"]["gates"] == []
        shown = server.get("/api/runs/bad")
        assert shown.status == 409 and shown.json()["code"] == "unreadable_run"
        head = Runs(ws).store.head("bad")
        decided = server.post("/api/runs/bad/gates/review", {"decision": "approve", "gateToken": "x"})
        assert decided.status == 409 and Runs(ws).store.head("bad") == head


def test_a_planted_private_folder_is_answered_as_a_refusal_not_a_crash(tmp_path: Path) -> None:
    """Another agent swaps the ref locks' folder under .git/vivary for a link out of the
    repository: deciding a gate is refused with the lower layer's code (was a 500), the
    run does not move, and nothing is written through the link."""
    ws = gated_workspace(tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    locks = ws / ".git" / "vivary" / "reflocks"
    if locks.is_dir():
        shutil.rmtree(locks)
    locks.parent.mkdir(exist_ok=True)
    locks.symlink_to(outside, target_is_directory=True)
    head = Runs(ws).store.head("r1")
    with serving("--root", str(ws)) as server:
        answer = server.post("/api/runs/r1/gates/review", {"decision": "approve", "gateToken": gate_token(ws, "r1")})
    assert (answer.status, answer.json()["code"]) == (409, "planted_link"), answer.body
    assert Runs(ws).store.head("r1") == head and list(outside.iterdir()) == []


# --- held: each returns the refusal


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gated_workspace(tmp_path_factory.mktemp("attacks") / "ws")


@pytest.fixture(scope="module")
def server(ws: Path) -> Any:
    with serving("--root", str(ws)) as s:
        yield s


@pytest.mark.parametrize("host", ["127.0.0.1:{port}.", "127.0.0.1.:{port}", "localhost.:{port}",
                                  "[0:0:0:0:0:0:0:1]:{port}", "[::ffff:127.0.0.1]:{port}", "127.1:{port}",
                                  "2130706433:{port}", "127.0.0.1:0{port}", "[::1]", "LOCALHOST.:{port}"])
def test_host_spellings_that_name_loopback_another_way_are_refused(server: Server, host: str) -> None:
    answer = server.get("/api/runs", host=host.format(port=server.port))
    assert answer.status == 403 and answer.json()["code"] == "bad_host"


def test_an_absolute_form_target_is_judged_by_its_host_header(server: Server) -> None:
    p, t = server.port, server.token
    for target, host in ((f"http://evil.example:{p}/api/runs", f"evil.example:{p}"),
                         (f"http://127.0.0.1:{p}/api/runs", f"evil.example:{p}")):
        status, _ = _raw(server, f"GET {target} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {t}\r\n"
                                 "Connection: close\r\n")
        assert status == 403


def test_deep_nesting_and_an_oversized_chunked_body_are_refused(server: Server, ws: Path) -> None:
    head = Runs(ws).store.head("r1")
    for deep in ("[" * 60_000, '{"a":' * 10_000 + "1" + "}" * 10_000):
        answer = server.request("POST", "/api/runs/r1/gates/review", auth=True, body=deep,
                                headers={"Content-Type": "application/json"})
        assert answer.status == 400 and answer.json()["code"] in ("bad_json", "bad_request")
    chunk = b"8001\r\n" + b"[" * 0x8001 + b"\r\n"  # two of them: just over the 64 KiB a body may be
    status, body = _raw(server, f"POST /api/runs/r1/gates/review HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                                f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\n"
                                "Transfer-Encoding: chunked\r\nConnection: close\r\n", chunk * 2 + b"0\r\n\r\n")
    assert status == 413 and json.loads(body)["code"] == "too_large"
    assert Runs(ws).store.head("r1") == head


def test_no_answer_lets_another_origin_read_it_and_a_preflight_is_refused(server: Server) -> None:
    evil = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type"}
    for method, path in (("OPTIONS", "/api/runs/r1/gates/review"), ("OPTIONS", "/api/health"), ("GET", "/"),
                         ("GET", "/api/health")):
        answer = server.request(method, path, headers=evil)
        assert answer.status in (401, 403, 405), (method, path)
        assert not any(k.startswith("access-control-") for k in answer.headers), (method, path)


def test_a_media_type_in_capitals_is_still_json(server: Server) -> None:
    answer = server.request("POST", "/api/runs/r1/gates/review", auth=True, body="{}",
                            headers={"Content-Type": "Application/JSON; charset=UTF-8"})
    assert answer.status == 400 and answer.json()["code"] == "bad_request"  # past the JSON check


def test_many_event_streams_leave_the_server_answering(server: Server) -> None:
    streams = []
    try:
        for _ in range(200):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            conn.request("GET", "/api/events", headers={"Host": f"127.0.0.1:{server.port}",
                                                        "Authorization": f"Bearer {server.token}"})
            streams.append(conn)
        first = streams[0].getresponse()
        assert first.status == 200 and first.readline().startswith(b"event: hello")
        assert server.get("/api/runs").status == 200 and server.proc.poll() is None
    finally:
        for conn in streams:
            conn.close()
    assert server.get("/api/health").status == 200


PAYLOAD = '<img src=x onerror="document.body.dataset.pwned=1"><script>document.body.dataset.pwned=2</script>'


@pytest.mark.slow  # a browser test
def test_repository_content_never_runs_as_script_in_the_page_or_the_graph(watched: Watched,
                                                                           tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    scaffold(ws, "--preset", "coding", "--yes")
    checks = ws / "verification" / "local-checks.md"
    checks.write_text(checks.read_text().replace("# Local checks", f"# </script>{PAYLOAD}"))
    write_files(ws, {"flow.yaml": SPEC})
    commit_all(ws, "an item whose title is markup")
    Runs(ws).plan(SPEC, {"topic": PAYLOAD}, "r1")
    report_draft(ws, "r1", PAYLOAD)
    Runs(ws).gate("r1", "review", "revise", gate_token(ws, "r1"), PAYLOAD)
    report_draft(ws, "r1", "<svg onload=\"document.body.dataset.pwned=3\"></svg>")
    git(ws, "status")  # the repository is still readable by git after the writes
    dialogs: list[str] = []
    page = watched.page
    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    with serving("--root", str(ws)) as server:
        page.goto(server.url + "#/runs/r1")
        page.wait_for_selector("[data-gate=review]")
        assert "<script>document.body.dataset.pwned=2</script>" in page.locator("main").inner_text()  # as text
        assert page.locator("main img, main svg, main script").count() == 0
        page.goto(f"http://127.0.0.1:{server.port}/#/graph")
        page.wait_for_selector("iframe.graph")
        frame = page.frame_locator("iframe.graph")
        frame.locator("body").wait_for()
        graph = next(f for f in page.frames if f != page.main_frame)
        graph.wait_for_load_state()
        assert graph.evaluate("document.documentElement.outerHTML.includes('pwned=1')")  # it got there
        assert graph.evaluate("document.body.dataset.pwned || null") is None
        assert graph.evaluate("document.querySelector('meta[name=generator]') !== null")
        assert page.evaluate("document.body.dataset.pwned || null") is None
    assert dialogs == []


def _forge_eval(root: Path, eval_id: str, score: float, attempts: Any = 1) -> None:
    """An eval whose every string (set, flow, agent, task, outcome, reason, run id) is
    markup: anyone who can push refs/vivary/evals/* chooses all of them."""
    repo = require(root)
    config = {"set": {"name": PAYLOAD, "tasks": {PAYLOAD: PAYLOAD, "t1": "d"}},
              "flow": {"name": PAYLOAD, "sha256": "x"}, "agent": PAYLOAD, "lanes": PAYLOAD, "repeat": 1, "seed": 0}
    store.start(repo, eval_id, config)
    for task in (PAYLOAD, "t1"):
        store.add(repo, eval_id, {"task": task, "trial": 0, "digest": "d", "score": score, "outcome": PAYLOAD,
                                  "reason": PAYLOAD, "attempts": attempts, "verifierCalls": 0, "tokens": 0,
                                  "wallMs": 0, "runId": f"{PAYLOAD}/../../x"})


@pytest.mark.slow  # a browser test
def test_eval_refs_never_run_as_script_in_the_evals_view(watched: Watched, repo_dir: Path) -> None:
    _forge_eval(repo_dir, "a", 0.0)
    _forge_eval(repo_dir, "b", 1.0)
    _forge_eval(repo_dir, "c", 1.0, attempts=PAYLOAD)  # unreadable: its error quotes the markup
    dialogs: list[str] = []
    page = watched.page
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    with serving("--root", str(repo_dir)) as server:
        page.goto(server.url + "#/evals")
        page.locator("tr[data-eval=a]").wait_for()
        for where, seen in (("evals/a", "t1"), ("compare/a/b", "Flipped tasks"), ("evals", "Compare two runs"),
                            ("evals/c", "cannot be read"), ("compare/a/c", "cannot be compared")):
            page.goto(f"http://127.0.0.1:{server.port}/#/{where}")
            page.wait_for_function("(s) => document.querySelector('main').innerText.includes(s)", arg=seen)
            assert "<script>document.body.dataset.pwned=2</script>" in page.locator("main").inner_text()  # as text
            assert page.locator("main img, main svg, main script").count() == 0
            assert page.evaluate("document.body.dataset.pwned || null") is None
        page.goto(f"http://127.0.0.1:{server.port}/#/evals/a")
        page.locator("tr[data-trial]").first.wait_for()
        assert page.locator("main tr[data-trial] a").count() == 0  # a run id that is no run id opens nothing
        assert server.get("/api/evals/a").json()["rows"][0]["audit"] is None  # nor becomes a command
    assert dialogs == []
    refused = "Failed to load resource: the server responded with a status of 409 (Conflict)"
    assert watched.errors == [refused, refused]  # the unreadable eval, shown and compared: nothing else
