"""What an OpenAI-compatible chat-completions server answers, read without trusting it:
the text of the one choice, why it stopped, and the tokens it says it spent, from a
whole JSON body or from a stream of server-sent events. Anything else is a one-line
:class:`BadAnswer`. Pure: the call program (:mod:`strato.agents.endpointcall`) does the
I/O."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tropo.untrusted import line

MAX_ANSWER = 128 * 1024  # characters of text kept: the envelope stays inside the MiB a caller keeps
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


class BadAnswer(ValueError):
    """The server's answer cannot be taken; the message is the one-line reason."""


@dataclass
class Answer:
    """The text so far, why the model stopped (None: not said yet) and its usage."""

    text: str = ""
    finish: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    done: bool = False  # a stream's `[DONE]`, or a whole body read

    def add(self, piece: str) -> None:
        if len(self.text) + len(piece) > MAX_ANSWER:
            raise BadAnswer(f"answer cut: over {MAX_ANSWER} characters")
        self.text += piece

    def result(self) -> str:
        """The whole text, or why it is not whole."""
        if not self.done and self.finish is None:
            raise BadAnswer("the stream ended before the answer did (no finish_reason, no [DONE])")
        if self.finish == "length":
            raise BadAnswer("answer cut by the server at max_tokens (finish_reason: length)")
        return self.text


def request_body(model: str, prompt: str, temperature: float | None, max_tokens: int | None,
                 stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}],
                            "stream": stream}
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if stream:  # the last event then carries the usage (OpenAI, Ollama, llama.cpp, vLLM)
        body["stream_options"] = {"include_usage": True}
    return body


def from_body(raw: bytes, content_type: str) -> Answer:
    """A whole (non-streamed) answer: `choices[0].message.content` and `usage`."""
    obj = _json(raw, content_type)
    answer = Answer(done=True)
    choice = _choice(obj) or {}
    message = choice.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
        raise BadAnswer("the answer has no choices[0].message.content")
    answer.add(message["content"])
    answer.finish = _finish(choice)
    answer.usage = _usage(obj)
    return answer


def feed_event(answer: Answer, line: bytes) -> None:
    """One line of a server-sent event stream: `data: {chunk}` adds its delta and usage;
    `data: [DONE]` ends it; comments, blank lines and other fields are skipped."""
    if not line.startswith(b"data:"):
        return
    data = line[5:].strip()
    if data == b"[DONE]":
        answer.done = True
        return
    obj = _json(data, "text/event-stream")
    if isinstance(obj.get("error"), dict | str):
        raise BadAnswer(f"the server reported an error mid-stream: {error_message(obj)}")
    answer.usage = _usage(obj) or answer.usage
    choice = _choice(obj)
    if choice is None:
        return  # the usage-only last chunk has no choices
    delta = choice.get("delta")
    piece = delta.get("content") if isinstance(delta, dict) else None
    if isinstance(piece, str):
        answer.add(piece)
    answer.finish = _finish(choice) or answer.finish


def error_message(obj: Any) -> str:
    """What an error body says (`{"error": {"message": ...}}` or `{"error": "..."}`),
    shown safely and short."""
    err = obj.get("error") if isinstance(obj, dict) else None
    said = err.get("message") if isinstance(err, dict) else err
    return line(said, 160) if said else "no message"


def _json(raw: bytes, content_type: str) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except ValueError:
        head = line(raw[:80].decode("utf-8", errors="replace"))
        raise BadAnswer(f"the answer is not JSON ({line(content_type, 60) or 'no content type'}): "
                        f"{head!r}") from None
    if not isinstance(obj, dict):
        raise BadAnswer(f"the answer is JSON but not an object: {type(obj).__name__}")
    return obj


def _choice(obj: dict[str, Any]) -> dict[str, Any] | None:
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _finish(choice: dict[str, Any]) -> str | None:
    reason = choice.get("finish_reason")
    return reason if isinstance(reason, str) else None


def _usage(obj: dict[str, Any]) -> dict[str, int]:
    """The token counts the server reports (total computed when it gives only the parts)."""
    said = obj.get("usage")
    if not isinstance(said, dict):
        return {}
    found = {k: v for k in USAGE_KEYS if type(v := said.get(k)) is int and v >= 0}
    if "total_tokens" not in found and {"prompt_tokens", "completion_tokens"} <= set(found):
        found["total_tokens"] = found["prompt_tokens"] + found["completion_tokens"]
    return found
