"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1 in a
thread (the stdlib's http.server): the model name a request asks for picks how it
answers (`http500`, `echokey`, `slow`, `trickle`, `cut`, `cutstream`, `notjson`, `huge`,
`hugestream`, `length`, `nousage`; any other name answers well, streamed when asked), so
one server plays a good model, a broken one, a slow one and a flood. No model runs: the
answer text is whatever the test puts in `replies`."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


@dataclass
class Stub:
    url: str  # the base an agents.toml names: http://127.0.0.1:PORT/v1
    replies: list[str] = field(default_factory=list)  # answers handed out in order
    requests: list[dict[str, Any]] = field(default_factory=list)  # what each caller sent
    stop: threading.Event = field(default_factory=threading.Event)


class _Server(ThreadingHTTPServer):
    """The HTTP server, holding the stub its handlers answer from."""

    daemon_threads = True
    stub: Stub


@contextlib.contextmanager
def chat_server() -> Iterator[Stub]:
    """Serve until the block ends (a slow answer is let go then)."""
    httpd = _Server(("127.0.0.1", 0), _Handler)
    stub = httpd.stub = Stub(f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.stop.set()
        httpd.shutdown()
        httpd.server_close()


def unused_url() -> str:
    """A loopback URL where nothing listens (a port just given back by the kernel)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        assert isinstance(self.server, _Server)
        stub = self.server.stub
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        stub.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        model = body.get("model")
        if self.path != "/v1/chat/completions":
            return self._send(404, b'{"error": {"message": "no such route"}}')
        if model == "http500":
            return self._send(500, b'{"error": {"message": "model failed to load", "type": "server_error"}}')
        if model == "echokey":  # a server that says back what it was sent
            said = json.dumps({"error": {"message": f"bad key {self.headers.get('Authorization', '').removeprefix('Bearer ')}"}})
            return self._send(401, said.encode())
        if model == "slow":
            stub.stop.wait(60)
            return self._send(200, json.dumps(_whole("late")).encode())
        if model == "trickle":  # a byte a while: no single read waits long
            self._head(200, "application/json", 10**6)
            while not stub.stop.wait(0.2):
                self._write(b" ")
            return None
        if model == "cut":
            self._head(200, "application/json", 4000)
            self._write(json.dumps(_whole("x" * 100)).encode()[:50])
            return self.close_connection_now()
        if model == "notjson":
            return self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        if model == "huge":
            return self._send(200, json.dumps(_whole("z" * (12 << 20))).encode())
        text = stub.replies.pop(0) if stub.replies else "{}"
        if model == "hugestream":
            return self._stream(["w" * 4096] * 64, "stop")
        if model == "cutstream":
            return self._stream([text[: len(text) // 2]], None, done=False)
        finish = "length" if model == "length" else "stop"
        if body.get("stream"):
            return self._stream([text[: len(text) // 2], text[len(text) // 2 :]], finish,
                                usage=model != "nousage")
        return self._send(200, json.dumps(_whole(text, finish, usage=model != "nousage")).encode())

    def close_connection_now(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _stream(self, pieces: list[str], finish: str | None, *, done: bool = True,
                usage: bool = True) -> None:
        self._head(200, "text/event-stream", None)
        self._write(b": keep-alive comment\n\n")
        for piece in pieces:
            self._event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        if finish is not None:
            self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if usage and done:
            self._event({"choices": [], "usage": USAGE})
        if done:
            self._write(b"data: [DONE]\n\n")

    def _event(self, obj: dict[str, Any]) -> None:
        self._write(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def _send(self, status: int, data: bytes, kind: str = "application/json") -> None:
        self._head(status, kind, len(data))
        self._write(data)

    def _head(self, status: int, kind: str, length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()

    def _write(self, data: bytes) -> None:
        with contextlib.suppress(OSError):  # the client may have hung up first
            self.wfile.write(data)
            self.wfile.flush()


def _whole(text: str, finish: str = "stop", *, usage: bool = True) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": finish}],
            **({"usage": USAGE} if usage else {})}
