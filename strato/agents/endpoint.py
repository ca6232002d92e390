"""An agent that is a model behind an OpenAI-compatible chat-completions server (Ollama,
llama.cpp's `server`, vLLM, LM Studio): `[agents.NAME] endpoint = "http://127.0.0.1:11434/v1"`
in an agents.toml. It runs as a program like any other agent, our own
(``python -I -m strato.agents.endpointcall``), so pacing, time bounds, cancel, bounded
output, background dispatch and the trust rule for the file it comes from are the ones
every agent has. The prompt goes to the server named here, so a server outside
loopback must be asked for (`allow_remote = true`); that is decided on the URL as
written, never on what a name resolves to. The API key stays in the environment: the
config names the variable (`api_key_env`), never the key."""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from strato.agents.interpreter import own_python

KEYS = frozenset({"endpoint", "model", "temperature", "max_tokens", "timeout_s", "api_key_env",
                  "allow_remote", "stream", "min_interval_s"})
PROGRAM = "strato.agents.endpointcall"
# what the process bound adds to the call's own deadline: the interpreter and httpx
# starting; the call ends itself at `timeout_s`, with its reason, well before
STARTUP_S = 15.0
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PRINTABLE = re.compile(r"[!-~]+")
# a host and port only, spelled so every URL parser reads the same host from it
_NETLOC = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


class EndpointError(ValueError):
    """An `[agents.NAME]` endpoint table that cannot be used (a configuration error)."""


@dataclass(frozen=True)
class Endpoint:
    """One configured server and how to ask it: the document the call program gets."""

    name: str
    url: str  # the base, e.g. http://127.0.0.1:11434/v1; the call posts to url/chat/completions
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 300
    api_key_env: str | None = None
    stream: bool = False
    loopback: bool = True

    def argv(self) -> tuple[str, ...]:
        """The agent's argv template: our own program, this document, the prompt."""
        return (*own_python("-m", PROGRAM), json.dumps(asdict(self), sort_keys=True), "{prompt}")

    @classmethod
    def from_json(cls, text: str) -> Endpoint:
        return cls(**json.loads(text))


def parse(name: str, table: dict[str, Any]) -> Endpoint:
    """The endpoint an `[agents.NAME]` table defines, each key checked; a remote server
    without `allow_remote = true` is refused here, at load, before anything is sent."""
    unknown = set(table) - KEYS
    if unknown:
        raise EndpointError(f"{name}: unknown keys {sorted(unknown)}")
    url = table["endpoint"]
    if not isinstance(url, str):
        raise EndpointError(f"{name}: endpoint must be a URL string")
    loopback = _is_loopback(name, url)
    allow = table.get("allow_remote", False)
    if not isinstance(allow, bool):
        raise EndpointError(f"{name}: allow_remote must be true or false")
    if not loopback and not allow:
        raise EndpointError(f"{name}: endpoint {url} is not on this machine (loopback); "
                            "set allow_remote = true to send prompts there")
    model = table.get("model")
    if not isinstance(model, str) or not model:
        raise EndpointError(f"{name}: an endpoint needs model = \"NAME\"")
    temperature = _number(name, table, "temperature", 0, 2)
    max_tokens = table.get("max_tokens")
    if max_tokens is not None and (type(max_tokens) is not int or max_tokens <= 0):
        raise EndpointError(f"{name}: max_tokens must be a positive integer")
    timeout = _number(name, table, "timeout_s", 0, None)
    if timeout == 0:
        raise EndpointError(f"{name}: timeout_s must be a positive number")
    key_env = table.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.fullmatch(key_env)):
        raise EndpointError(f"{name}: api_key_env must name an environment variable")
    stream = table.get("stream", False)
    if not isinstance(stream, bool):
        raise EndpointError(f"{name}: stream must be true or false")
    return Endpoint(name, url.rstrip("/"), model, temperature, max_tokens,
                    300.0 if timeout is None else timeout, key_env, stream, loopback)


def _number(name: str, table: dict[str, Any], key: str, low: float, high: float | None) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if type(value) not in (int, float) or not low <= value <= (high if high is not None else value):
        bound = f"between {low:g} and {high:g}" if high is not None else "a positive number"
        raise EndpointError(f"{name}: {key} must be {bound}")
    return float(value)


def _is_loopback(name: str, url: str) -> bool:
    """Whether the URL, as written, names this machine: `localhost` or a loopback
    address. A name that resolves to one still counts as remote (resolution can change)."""
    if not _PRINTABLE.fullmatch(url):  # urlsplit drops tabs and newlines; httpx may not
        raise EndpointError(f"{name}: endpoint {url!r} has spaces or characters outside ASCII")
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # .port raises on a malformed one
    except ValueError as exc:
        raise EndpointError(f"{name}: endpoint {url!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise EndpointError(f"{name}: endpoint must be an http:// or https:// URL with a host")
    if not _NETLOC.fullmatch(parts.netloc) or "?" in url or "#" in url:
        raise EndpointError(f"{name}: endpoint must be a plain base URL, scheme://host[:port]/path "
                            "(a key goes in api_key_env)")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
