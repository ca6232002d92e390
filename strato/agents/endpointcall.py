"""The program an endpoint agent runs (``python -I -m strato.agents.endpointcall ENDPOINT
PROMPT``, argv from :mod:`strato.agents.endpoint`): one chat-completions request over
httpx, then either the answer on stdout as one JSON envelope, the shape the Claude CLI
prints (``{"type": "result", "result": TEXT, "usage": {...}}``, which
:mod:`strato.agents.calls` and agent runs already read), or one line on stderr and exit
1. Nothing goes to stdout until the whole answer is in, so a failure leaves no half
answer. The call ends itself at its `timeout_s` with that reason; the caller's process
bound (a little longer) and a cancel stop it like any agent.

The API key is read here from the variable the config names, sent only in the
Authorization header and never printed: a reason that would show it shows `***`."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import NoReturn

import httpx

from strato.agents.chat import Answer, BadAnswer, error_message, feed_event, from_body, request_body
from strato.agents.endpoint import Endpoint
from tropo.redact import redact

MAX_WIRE = 8 << 20  # bytes read from the server at most (a stream's framing included)
MAX_LINE = 1 << 20  # one server-sent event line
_ENDING = threading.Lock()  # held by whichever ends the call: the answer or the deadline


class Failed(Exception):
    """The one-line reason this call gave no answer."""


def ask(ep: Endpoint, prompt: str, key: str | None) -> Answer:
    """One request to the server, bounded in bytes read; the answer or :class:`Failed`."""
    # uncompressed, so the bytes bounded are the bytes parsed (no bomb to inflate)
    headers = {"Accept": "text/event-stream" if ep.stream else "application/json",
               "Accept-Encoding": "identity"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = request_body(ep.model, prompt, ep.temperature, ep.max_tokens, ep.stream)
    url = f"{ep.url}/chat/completions"
    # a loopback server is reached directly: no proxy or netrc from the environment
    with httpx.Client(timeout=ep.timeout_s, trust_env=not ep.loopback) as client:
        try:
            with client.stream("POST", url, json=body, headers=headers) as resp:
                if resp.status_code >= 400:
                    raise Failed(f"answered HTTP {resp.status_code}: {_error_text(resp, key)}")
                kind = resp.headers.get("content-type", "")
                if resp.headers.get("content-encoding", "identity") != "identity":
                    raise Failed("answered compressed, though asked not to")
                if ep.stream and kind.startswith("text/event-stream"):
                    return _events(_bounded(resp.iter_raw()))
                return from_body(b"".join(_bounded(resp.iter_raw())), kind)
        except httpx.ConnectError as exc:
            raise Failed(f"is down: cannot connect to {url} ({_why(exc)})") from None
        except httpx.TimeoutException:
            raise Failed(f"did not answer within {ep.timeout_s:g}s") from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise Failed(f"cut the connection mid-answer ({_why(exc)})") from None
        except httpx.HTTPError as exc:
            raise Failed(f"request failed: {type(exc).__name__}: {_why(exc)}") from None
        except BadAnswer as exc:
            raise Failed(str(exc)) from None


def _events(chunks: Iterator[bytes]) -> Answer:
    answer, pending = Answer(), b""
    for chunk in chunks:
        *lines, pending = (pending + chunk).split(b"\n")
        if len(pending) > MAX_LINE:
            raise BadAnswer(f"answer cut: an event line over {MAX_LINE} bytes")
        for event in lines:
            feed_event(answer, event.rstrip(b"\r"))
    feed_event(answer, pending.rstrip(b"\r"))
    return answer


def _bounded(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The raw body (decompressed by nobody: we ask for none), stopped past MAX_WIRE."""
    seen = 0
    for chunk in chunks:
        seen += len(chunk)
        if seen > MAX_WIRE:
            raise BadAnswer(f"answer cut: the server sent over {MAX_WIRE >> 20} MiB")
        yield chunk


def _error_text(resp: httpx.Response, key: str | None) -> str:
    """What an error body says, the key taken out before it is cut short."""
    raw = b""
    for chunk in resp.iter_raw():
        raw += chunk
        if len(raw) > 65536:
            break
    if key:
        raw = raw.replace(key.encode(), b"***")
    try:
        return error_message(json.loads(raw))
    except ValueError:
        return error_message({"error": raw[:160].decode("utf-8", errors="replace") or "empty body"})


def _why(exc: Exception) -> str:
    return " ".join(str(exc).split())[:160] or type(exc).__name__


def _deadline(ep: Endpoint) -> None:
    """End the whole call at `timeout_s`, whatever httpx is waiting on (its timeouts are
    per read: a server that trickles bytes would never trip them)."""

    def expire() -> None:
        if _ENDING.acquire(blocking=False):  # else the answer is being printed
            _fail(ep, f"did not answer within {ep.timeout_s:g}s")

    timer = threading.Timer(ep.timeout_s, expire)
    timer.daemon = True
    timer.start()


def _fail(ep: Endpoint, reason: str, key: str | None = None) -> NoReturn:
    text = f"endpoint {ep.name} ({ep.model}) {reason}"
    text = redact(text.replace(key, "***") if key else text)
    sys.stderr.buffer.write(text.encode("utf-8", errors="replace") + b"\n")
    sys.stderr.flush()
    os._exit(1)  # from the timer thread too: no half answer is ever printed


def main() -> None:
    ep, prompt = Endpoint.from_json(sys.argv[1]), sys.argv[2]
    started = time.monotonic()
    key = os.environ.get(ep.api_key_env) if ep.api_key_env else None
    if ep.api_key_env and not key:
        _fail(ep, f"needs its API key in ${ep.api_key_env}, which is not set")
    _deadline(ep)
    try:
        answer = ask(ep, prompt, key)
        text = answer.result()
    except (Failed, BadAnswer) as exc:
        _ENDING.acquire()
        _fail(ep, str(exc), key)
    envelope = {"type": "result", "result": text, "model": ep.model, "usage": answer.usage,
                "duration_ms": int((time.monotonic() - started) * 1000)}
    _ENDING.acquire()
    # UTF-8 whatever the locale: it is what the caller decodes
    line = json.dumps(envelope, ensure_ascii=False) + "\n"
    sys.stdout.buffer.write(line.encode("utf-8", errors="replace"))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
