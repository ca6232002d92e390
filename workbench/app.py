"""The workbench's HTTP side: a Starlette app whose every request first passes the
checks of ``workbench.guards``, then reads or writes through a ``Source``.

Routes (docs/workbench.md): the page and its assets (public: package code), ``/api/health``
(public: says only that the server is up), and everything else under ``/api/``, which
needs the token. Writes take JSON only, so a cross-site form (which can only send form
encodings) is refused even before its missing token.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tropo.fs.private import Refusal as Refused
from workbench.assets import ASSETS, asset
from workbench.guards import Served, host_refusal, origin_refusal, token_refusal
from workbench.source import DEFAULT_LIMIT, Refusal, Source

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PUBLIC = frozenset({"/", "/api/health", *(f"/assets/{name}" for name in ASSETS)})
MAX_BODY = 64 * 1024
POLL_S = 0.5  # how often the event stream looks at the run refs
KEEPALIVE_S = 15.0
CHECKED = ("host", "origin", "authorization", "content-type", "sec-fetch-site")  # each at most once


def _headers(served: Served, path: str) -> list[tuple[bytes, bytes]]:
    out = [(b"content-security-policy", served.csp().encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
           (b"cross-origin-opener-policy", b"same-origin"), (b"cross-origin-resource-policy", b"same-origin")]
    if path.startswith("/api/") or path == "/":
        out.append((b"cache-control", b"no-store"))
    return out


class Checks:
    """ASGI middleware: Host, Origin, the token and JSON writes, before any route; the
    security headers on every answer."""

    def __init__(self, app: ASGIApp, served: Served) -> None:
        self.app, self.served = app, served

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        extra = _headers(self.served, path)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:
            status, code, text = refusal
            response = _error(status, code, text)
            if status == 401:
                response.headers["www-authenticate"] = "Bearer"
            await response(scope, receive, with_headers)
            return
        await self.app(scope, receive, with_headers)

    def refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        pairs = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        headers = dict(pairs)
        names = [k for k, _ in pairs]
        if twice := sorted({k for k in CHECKED if names.count(k) > 1}):
            # a dict keeps the last one: with two, which one was checked would be luck
            return 400, "duplicate_header", f"{', '.join(twice)} sent more than once"
        host = headers.get("host")
        if (why := host_refusal(self.served, host)) is not None:
            return 403, "bad_host", why
        assert host is not None
        if (why := origin_refusal(host, headers.get("origin"))) is not None:
            return 403, "bad_origin", why
        path, method = scope["path"], scope["method"]
        if path.startswith("/api/") and headers.get("sec-fetch-site") == "cross-site":
            return 403, "cross_site", "a request from another site"
        if path not in PUBLIC and (why := token_refusal(self.served, headers.get("authorization"))):
            return 401, "unauthorized", why
        if method not in ("GET", "HEAD") and headers.get("content-type", "").split(";")[0].strip().lower() \
                != "application/json":
            return 415, "json_only", "writes take Content-Type: application/json"
        return None


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"ok": False, "code": code, "error": message}, status_code=status)


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or len(raw) > 9:
        raise Refusal(400, "bad_page", f"{name} must be a whole number")
    return int(raw)


async def _body(request: Request) -> Any:
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY:
            raise Refusal(413, "too_large", f"a request body is at most {MAX_BODY} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise Refusal(400, "bad_json", "the body is not JSON") from None


def create_app(source: Source, served: Served) -> ASGIApp:
    """The workbench over ``source``, answering only as ``served`` says."""
    instance = str(uuid.uuid4())

    def handled(work: Callable[[Request], Awaitable[Any]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(await work(request))
            except Refusal as exc:
                return _error(exc.status, exc.code, str(exc))
            except Refused as exc:  # refused below, unmapped here (a planted link): still said
                return _error(409, exc.code, str(exc))

        return endpoint

    def threaded(read: Callable[[Request], Any]) -> Callable[[Request], Awaitable[Response]]:
        async def work(request: Request) -> Any:
            return await run_in_threadpool(read, request)

        return handled(work)

    async def index(_: Request) -> Response:
        return Response(asset("index.html"), media_type="text/html; charset=utf-8")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:  # a fixed list: no path from the request reaches the filesystem
            return _error(404, "not_found", "no such asset")
        return Response(asset(name), media_type=ASSETS[name])

    async def health(_: Request) -> Response:
        return JSONResponse({"ok": True, "demo": source.demo})

    async def session(_: Request) -> Any:
        return {"ok": True, "demo": source.demo, "instance": instance}

    async def gate(request: Request) -> Any:
        body = await _body(request)
        p = request.path_params
        return await run_in_threadpool(source.decide_gate, p["run_id"], p["step"], body)

    async def proposal(request: Request) -> Any:
        body = await _body(request)
        decision = body.get("decision") if isinstance(body, dict) else None
        return await run_in_threadpool(source.decide_proposal, request.path_params["pid"], str(decision))

    def graph(_: Request) -> Any:
        return {"html": source.graph_page()}

    async def events(_: Request) -> Response:
        return StreamingResponse(_stream(source, instance), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    routes = [
        Route("/", index),
        Route("/assets/{name}", static),
        Route("/api/health", health),
        Route("/api/session", handled(session)),
        Route("/api/runs", threaded(lambda r: source.runs(
            _int(r, "offset", 0), _int(r, "limit", DEFAULT_LIMIT)))),
        Route("/api/runs/{run_id}", threaded(lambda r: source.run(
            r.path_params["run_id"], _int(r, "offset", 0), _int(r, "limit", 200)))),
        Route("/api/runs/{run_id}/gates/{step:path}", handled(gate), methods=["POST"]),
        Route("/api/events", events),
        Route("/api/board", threaded(lambda _: source.board())),
        Route("/api/guard", threaded(lambda _: source.guard())),
        Route("/api/guard/review", threaded(lambda r: source.review(
            r.query_params.get("base", "refs/heads/main"), r.query_params.get("head", "HEAD")))),
        Route("/api/heartbeat", threaded(lambda _: source.heartbeat())),
        Route("/api/heartbeat/{pid}", handled(proposal), methods=["POST"]),
        Route("/api/lanes", threaded(lambda _: source.lanes())),
        Route("/api/graph", threaded(graph)),
        Route("/api/evals", threaded(lambda _: source.evals())),
        Route("/api/evals/{eval_id}", threaded(lambda r: source.eval(r.path_params["eval_id"]))),
        Route("/api/evals/{a}/compare/{b}", threaded(lambda r: source.compare_evals(
            r.path_params["a"], r.path_params["b"]))),
        Route("/api/evals/{eval_id}/runs/{run_id}", threaded(lambda r: source.eval_run(
            r.path_params["eval_id"], r.path_params["run_id"], _int(r, "offset", 0), _int(r, "limit", 200)))),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, "not_found", "no such page")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _error(405, "method_not_allowed", "method not allowed here")

    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})
    return Checks(app, served)


def _event(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, sort_keys=True)}\n\n".encode()


async def _stream(source: Source, instance: str) -> AsyncIterator[bytes]:
    """Server-sent events: ``hello`` with every run's head, then ``runs`` each time a
    run ref moves (or a run appears or goes), and a comment now and then to keep the
    connection alive."""
    last = await run_in_threadpool(source.tips)
    yield _event("hello", {"instance": instance, "demo": source.demo, "tips": last})
    quiet = 0.0
    while True:
        await asyncio.sleep(POLL_S)
        now = await run_in_threadpool(source.tips)
        moved = sorted(r for r, head in now.items() if last.get(r) != head)
        gone = sorted(set(last) - set(now))
        if moved or gone:
            yield _event("runs", {"moved": {r: now[r] for r in moved}, "gone": gone})
            last, quiet = now, 0.0
        elif (quiet := quiet + POLL_S) >= KEEPALIVE_S:
            yield b": keepalive\n\n"
            quiet = 0.0
