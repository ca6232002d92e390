"""Every refusal of workbench.guards, against the real `vivary serve` process over real
HTTP: a foreign Host or Origin, no token, a wrong token, a token in a cross-site form
post, JSON-only writes, path traversal, and the strict policy on every answer."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from strato.runs.service import Runs
from tests.support.serving import Server, gate_token, gated_workspace, serving


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gated_workspace(tmp_path_factory.mktemp("guards") / "ws")


@pytest.fixture(scope="module")
def server(ws: Path) -> Iterator[Server]:
    with serving("--root", str(ws)) as s:
        yield s


def test_prints_one_line_naming_a_real_port_and_a_fresh_token(server: Server, ws: Path) -> None:
    assert server.address == "127.0.0.1" and server.port > 0 and len(server.token) >= 40
    assert server.line == f"vivary: serving http://127.0.0.1:{server.port}/?token={server.token}\n"
    assert server.request("GET", "/api/health").json() == {"ok": True, "demo": False}
    with serving("--root", str(ws)) as other:
        assert other.token != server.token and other.port != server.port


def test_it_listens_on_127_0_0_1_only(server: Server) -> None:
    for address in ("127.0.0.2", _outward_address()):
        if address is None:
            continue
        with socket.socket() as s, pytest.raises(OSError):
            s.settimeout(5)
            s.connect((address, server.port))


def _outward_address() -> str | None:
    """This machine's address on its default route, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET: nothing is sent for a UDP connect
            return str(s.getsockname()[0])
        except OSError:
            return None


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST:{port}"])
def test_the_loopback_names_with_the_port_are_served(server: Server, host: str) -> None:
    assert server.get("/api/runs", host=host.format(port=server.port)).status == 200


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1", "127.0.0.1:1", "localhost",
                                  "127.0.0.1.nip.io:{port}", "0.0.0.0:{port}", "localhost:{port}@evil"])
def test_a_foreign_host_is_refused_even_with_the_token(server: Server, host: str) -> None:
    for path in ("/", "/assets/app.js", "/api/health", "/api/runs"):
        answer = server.get(path, host=host.format(port=server.port))
        assert answer.status == 403, (host, path)
        assert answer.json()["code"] == "bad_host"


def test_a_missing_host_is_refused(server: Server) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("GET", "/api/health", skip_host=True)
    conn.endheaders()
    assert conn.getresponse().status in (400, 403)  # uvicorn itself answers 400 to HTTP/1.1 without Host
    conn.close()


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:{port}",
                                    "https://127.0.0.1:{port}", "http://127.0.0.1:{other}"])
def test_a_foreign_origin_is_refused_even_with_the_token(server: Server, origin: str) -> None:
    shown = origin.format(port=server.port, other=server.port + 1)
    for method in ("GET", "POST"):
        answer = server.request(method, "/api/runs", headers={"Origin": shown}, auth=True)
        assert answer.status == 403 and answer.json()["code"] == "bad_origin", (shown, method)


def test_the_served_origin_is_accepted(server: Server) -> None:
    answer = server.get("/api/runs", headers={"Origin": f"http://127.0.0.1:{server.port}"})
    assert answer.status == 200
    same = server.get("/api/runs", headers={"Origin": f"http://localhost:{server.port}"},
                      host=f"localhost:{server.port}")
    assert same.status == 200


@pytest.mark.parametrize("path", ["/api/runs", "/api/runs/r1", "/api/events", "/api/board", "/api/guard",
                                  "/api/guard/review", "/api/heartbeat", "/api/lanes", "/api/graph",
                                  "/api/session", "/api/evals", "/api/evals/e1", "/api/evals/e1/compare/e2",
                                  "/api/evals/e1/runs/r1"])
def test_reads_of_the_repository_need_the_token(server: Server, path: str) -> None:
    bare = server.request("GET", path)
    assert bare.status == 401 and bare.headers["www-authenticate"] == "Bearer"
    for wrong in (f"Bearer {server.token[:-1]}x", f"Basic {server.token}", "Bearer", f"{server.token}",
                  f"Bearer {server.token} extra"):
        assert server.request("GET", path, headers={"Authorization": wrong}).status == 401, wrong


def test_the_token_is_never_taken_from_the_url(server: Server) -> None:
    assert server.request("GET", f"/api/runs?token={server.token}").status == 401
    assert server.request("GET", f"/api/runs?access_token={server.token}").status == 401


def test_a_write_without_the_token_changes_nothing(server: Server, ws: Path) -> None:
    head = Runs(ws).store.head("r1")
    body = f'{{"decision": "approve", "gateToken": "{gate_token(ws, "r1")}"}}'
    answer = server.request("POST", "/api/runs/r1/gates/review", body=body,
                            headers={"Content-Type": "application/json"})
    assert answer.status == 401
    assert Runs(ws).store.head("r1") == head


def test_a_cross_site_form_post_carrying_the_token_is_refused(server: Server, ws: Path) -> None:
    head = Runs(ws).store.head("r1")
    form = f"decision=approve&gateToken={gate_token(ws, 'r1')}&token={server.token}"
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"}
    answer = server.request("POST", "/api/runs/r1/gates/review", headers=headers, body=form)
    assert answer.status == 403
    # without an Origin (a client that sends none) the token in the body is still no token
    del headers["Origin"]
    assert server.request("POST", "/api/runs/r1/gates/review", headers=headers, body=form).status == 401
    # and with the header token, a form encoding is still refused: writes take JSON only
    headers["Authorization"] = f"Bearer {server.token}"
    assert server.request("POST", "/api/runs/r1/gates/review", headers=headers, body=form).status == 415
    assert server.request("POST", "/api/runs/r1/gates/review", headers={**headers, "Sec-Fetch-Site": "cross-site",
                          "Content-Type": "application/json"}, body="{}").status == 403
    assert Runs(ws).store.head("r1") == head


@pytest.mark.parametrize("path", ["/api/runs/..%2F..%2Fetc%2Fpasswd", "/api/runs/../../etc/passwd",
                                  "/api/runs/-rf", "/api/runs/r1%00", "/assets/..%2F..%2Fpyproject.toml",
                                  "/assets/../repo.py", "/assets/index.html", "/assets/%2e%2e/app.py",
                                  "/api/heartbeat/..%2F..%2Fx"])
def test_path_traversal_in_ids_is_refused(server: Server, path: str) -> None:
    method = "POST" if path.startswith("/api/heartbeat/") else "GET"
    answer = server.request(method, path, auth=True, headers={"Content-Type": "application/json"},
                            body='{"decision": "reject"}' if method == "POST" else None)
    assert answer.status in (400, 404), path
    assert b"[project]" not in answer.body and b"root:" not in answer.body


def test_a_gate_step_with_a_traversal_is_refused(server: Server, ws: Path) -> None:
    token = gate_token(ws, "r1")
    answer = server.post("/api/runs/r1/gates/../../review", {"decision": "approve", "gateToken": token})
    assert answer.status in (400, 404)
    answer = server.post("/api/runs/..%2Fr1/gates/review", {"decision": "approve", "gateToken": token})
    assert answer.status in (400, 404)


def test_every_answer_carries_the_strict_policy(server: Server) -> None:
    for path, auth in (("/", False), ("/assets/app.js", False), ("/api/runs", True), ("/api/nope", True)):
        answer = server.request("GET", path, auth=auth)
        csp = answer.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "http" not in csp
        assert answer.headers["x-content-type-options"] == "nosniff"


def test_the_page_has_no_inline_script_and_names_no_other_host(server: Server) -> None:
    page = server.request("GET", "/").body.decode()
    assert "<script>" not in page and " on" not in page.replace("\n", " ").split("<body>")[1].split(">")[0]
    for asset in ("/", "/assets/app.js", "/assets/app.css"):
        text = server.request("GET", asset).body.decode()
        assert "http://" not in text.replace("http://127.0.0.1:PORT", "") and "https://" not in text, asset
        assert "innerHTML" not in text and "eval(" not in text


def test_a_body_too_large_or_not_json_is_refused(server: Server) -> None:
    assert server.post("/api/runs/r1/gates/review", "x" * 70_000).status == 413
    bad = server.request("POST", "/api/runs/r1/gates/review", headers={"Content-Type": "application/json"},
                         body="{not json", auth=True)
    assert bad.status == 400 and bad.json()["code"] == "bad_json"
