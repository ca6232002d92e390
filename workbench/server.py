"""``vivary serve``: bind the socket first (so port 0 becomes a real port and the one
line we print is true), then hand it to uvicorn. Loopback only unless the person names
another address."""

from __future__ import annotations

import html
import shutil
import socket
import sys
import tempfile
import webbrowser
from collections.abc import Callable
from pathlib import Path

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


def launch_page(link: str) -> Path:
    """A page only this user can read that sends the browser on to ``link``. `--open`
    hands the browser this file's name, not ``link``: a browser's command line is visible
    to every user of the machine (`ps`), the file is not (0600 in a 0700 folder)."""
    folder = Path(tempfile.mkdtemp(prefix="vivary-open-"))  # mode 0700
    page = folder / "open.html"
    shown = html.escape(link, quote=True)
    with page.open("x", encoding="utf-8") as out:  # created under the folder's 0700
        page.chmod(0o600)
        out.write(f'<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
                  f'<meta http-equiv="refresh" content="0;url={shown}">'
                  f'<title>Vivary workbench</title><a href="{shown}">Open the workbench</a>\n')
    return page


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
    opened = launch_page(link) if open_browser else None
    if opened is not None:
        webbrowser.open(opened.as_uri())
    config = uvicorn.Config(create_app(source, served), log_level="warning", access_log=False,
                            lifespan="off", timeout_graceful_shutdown=1)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if opened is not None:
            shutil.rmtree(opened.parent, ignore_errors=True)
