"""`vivary serve` on the command line: its help, the one line it prints, the warning for
an address beyond loopback, the demo export and its refusals, and one-line errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.console import run
from tests.support.requirements import editable_extra_command
from tests.support.serving import BIN, serving


def _vivary(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`vivary ARGS` in process: only for runs that answer and exit (a server that serves
    is a real process, through `serving`)."""
    return run("vivary", *args, cwd=cwd)


def test_help_has_examples(tmp_path: Path) -> None:
    proc = _vivary("serve", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and "vivary serve --demo" in proc.stdout and "--export-demo" in proc.stdout
    assert "serve" in _vivary("--help", cwd=tmp_path).stdout


def test_outside_a_repository_it_refuses_in_one_line(tmp_path: Path) -> None:
    proc = _vivary("serve", "--root", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "not a git work tree" in proc.stderr


def test_a_missing_folder_is_named_as_missing_not_as_an_uninitialised_repository(tmp_path: Path) -> None:
    proc = _vivary("serve", "--root", str(tmp_path / "nope"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"vivary: no such folder: {tmp_path / 'nope'}; pass --root with an existing folder\n"
    assert "no such folder" in _vivary("hooks", "status", "--root", str(tmp_path / "nope"), cwd=tmp_path).stderr


def test_a_taken_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        proc = _vivary("serve", "--demo", "--port", str(taken.getsockname()[1]), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("vivary: cannot listen on 127.0.0.1:") and proc.stderr.count("\n") == 1
    assert _vivary("serve", "--port", "70000", cwd=tmp_path).returncode == 2


def test_another_address_needs_the_flag_and_warns(tmp_path: Path) -> None:
    with serving("--demo", "--host", "127.0.0.2", cwd=tmp_path) as server:
        assert server.proc.stderr is not None
        assert "warning: serving on 127.0.0.2" in server.proc.stderr.readline()
        assert server.line.startswith(f"vivary: serving http://127.0.0.2:{server.port}/?token=")
        assert server.request("GET", "/api/health", host=f"127.0.0.2:{server.port}").status == 200
        assert server.request("GET", "/api/health", host=f"localhost:{server.port}").status == 200
        assert server.request("GET", "/api/health", host=f"evil.example:{server.port}").status == 403
    with serving("--demo", cwd=tmp_path) as plain:
        assert plain.address == "127.0.0.1"


def test_export_demo_writes_the_page_and_refuses_a_folder_in_use(tmp_path: Path) -> None:
    out = tmp_path / "site"
    first = _vivary("serve", "--export-demo", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert {p.name for p in out.rglob("*") if p.is_file()} == {
        "index.html", ".vivary-demo-export", "app.js", "app.css", "static-data.js"}
    page = (out / "index.html").read_text()
    assert '<script src="assets/static-data.js"></script>' in page and "<script>" not in page
    assert "demo-note" in (out / "assets" / "static-data.js").read_text()
    again = _vivary("serve", "--export-demo", str(out), cwd=tmp_path)  # an earlier export: rewritten
    assert again.returncode == 0
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep me")
    refused = _vivary("serve", "--export-demo", str(busy), cwd=tmp_path)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert [p.name for p in busy.iterdir()] == ["mine.txt"]


def test_open_hands_the_browser_a_page_leading_to_the_printed_url(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    with serving("--demo", "--open", cwd=tmp_path, env={**os.environ, "BROWSER": str(browser)}) as server:
        for _ in range(600):
            if opened.is_file() and opened.read_text():
                break
            time.sleep(0.05)
        uri = opened.read_text().strip()  # a private page leading to the printed URL, not the URL
        assert uri.startswith("file://") and server.token not in uri
        assert server.url in Path(uri.removeprefix("file://")).read_text()


def test_without_the_serve_extra_it_says_what_to_install(tmp_path: Path) -> None:
    blocked = "import sys; sys.modules['starlette'] = None; sys.modules['uvicorn'] = None; " \
              "from vivary.cli import main; main(sys.argv[1:])"
    proc = subprocess.run([sys.executable, "-c", blocked, "serve", "--demo"], capture_output=True, text=True,
                          check=False, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    # the clone's own source, installed editable by the interpreter that runs us: a command that
    # works, unlike `pip install 'vivary-git[serve]'` (no index has it); tests/test_wheel.py runs it
    assert proc.stderr == f"vivary: the workbench needs starlette: {editable_extra_command('serve')}\n"
    out = tmp_path / "site"  # the static export needs no server
    exported = subprocess.run([sys.executable, "-c", blocked, "serve", "--export-demo", str(out)],
                              capture_output=True, text=True, check=False, cwd=tmp_path)
    assert exported.returncode == 0 and (out / "index.html").is_file()


def test_under_json_the_line_and_the_errors_are_one_object(tmp_path: Path) -> None:
    proc = subprocess.Popen([str(BIN / "vivary"), "serve", "--demo", "--json"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        doc = json.loads(proc.stdout.readline())
        assert doc == {"ok": True, "demo": True, "port": doc["port"], "token": doc["token"],
                       "url": f"http://127.0.0.1:{doc['port']}/?token={doc['token']}"}
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    refused = _vivary("serve", "--json", "--root", str(tmp_path), cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert json.loads(refused.stdout)["ok"] is False
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    export = _vivary("serve", "--json", "--export-demo", str(busy), cwd=tmp_path)
    assert export.returncode == 1 and json.loads(export.stdout)["exitCode"] == 1
    fresh = _vivary("serve", "--json", "--export-demo", str(tmp_path / "new"), cwd=tmp_path)
    assert json.loads(fresh.stdout) == {"ok": True, "wrote": str(tmp_path / "new"), "files": 5}
