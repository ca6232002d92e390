"""``vivary serve``: bind the socket first (so port 0 becomes a real port and the one
line we print is true), then hand it to uvicorn. Loopback only unless the person names
another address."""

from __future__ import annotations

import socket
import sys
import webbrowser
from collections.abc import Callable

from workbench.assets import graph_hashes
from workbench.guards import Served, new_token
from workbench.source import Source

LOOPBACK = "127.0.0.1"
Announce = Callable[[str, int, str], None]  # (url, port, token): told once, when listening


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); OSError when the address is taken or wrong."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url(served: Served, host: str) -> str:
    shown = LOOPBACK if host in (LOOPBACK, "0.0.0.0", "::") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{served.port}/?token={served.token}"


def serve(source: Source, host: str, port: int, open_browser: bool,
          announce: Announce, warn: Callable[[str], None]) -> None:
    """Serve ``source`` until interrupted; ``announce`` is told the URL once, listening."""
    import uvicorn  # the serve extra: only now

    from workbench.app import create_app

    sock = bind(host, port)
    extra = None if host == LOOPBACK else (f"[{host}]" if ":" in host else host)
    served = Served(sock.getsockname()[1], new_token(), extra, graph_hashes())
    if extra is not None:
        warn(f"vivary: warning: serving on {host}, not only this machine's loopback: anyone who can "
             "reach it and sees the token can read the repository and decide gates")
    link = url(served, host)
    announce(link, served.port, served.token)
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(link)
    config = uvicorn.Config(create_app(source, served), log_level="warning", access_log=False,
                            lifespan="off", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])
