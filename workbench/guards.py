"""Who may talk to the workbench: the checks every request passes before any route runs.

A page on another site can make the browser send requests to 127.0.0.1 (a form post, or
a DNS name rebound to loopback), so the server trusts nothing the request could carry
from there: the ``Host`` must name the served address (a rebound name does not), an
``Origin``, when sent, must be the served origin, and every write and every read of the
repository's contents needs the per-start token in ``Authorization`` (a header no
cross-site form can set; it is never read from a URL, a cookie or a body). Pure
functions: the app (``workbench.app``) applies them.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

# Every asset comes from the package; nothing inline, nothing from another host.
CSP = (
    "default-src 'self'; script-src 'self'{scripts}; style-src 'self'{styles}; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'; frame-src 'self'"
)


def new_token() -> str:
    """The per-start secret: shown once, in the URL the server prints."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Served:
    """The addresses the server answers as, and its token."""

    port: int
    token: str
    extra_host: str | None = None  # an address given with --host, beside loopback
    inline_hashes: tuple[str, ...] = field(default=())  # 'sha256-...' of embedded package pages

    def hosts(self) -> frozenset[str]:
        names = [*LOOPBACK_NAMES, *([self.extra_host] if self.extra_host else [])]
        return frozenset(f"{name}:{self.port}" for name in names)

    def csp(self) -> str:
        extra = "".join(f" '{h}'" for h in self.inline_hashes)
        return CSP.format(scripts=extra, styles=extra)


def host_refusal(served: Served, host: str | None) -> str | None:
    """Why the ``Host`` header is refused (None: it names this server). A name that DNS
    rebinding points at loopback, or a missing port, is not this server."""
    if host is None:
        return "no Host header"
    if host.lower() not in served.hosts():
        return f"Host {host!r} is not this server (use http://127.0.0.1:{served.port}/)"
    return None


def origin_refusal(host: str, origin: str | None) -> str | None:
    """Why an ``Origin`` is refused: when sent, it must be the origin the page was served
    from (``null``, a sandboxed frame or a file, is not)."""
    if origin is None or origin == f"http://{host.lower()}":
        return None
    return f"Origin {origin!r} is not this server's"


def token_refusal(served: Served, authorization: str | None) -> str | None:
    """Why the request lacks the token: ``Authorization: Bearer TOKEN``, compared in
    constant time."""
    if authorization is None:
        return "this needs the token: send Authorization: Bearer TOKEN (from the URL vivary serve printed)"
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), served.token.encode()):
        return "wrong token (the server prints a new one each time it starts)"
    return None
