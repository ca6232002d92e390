"""The page's files, shipped in the package (`workbench/static/`), and the policy hashes of
`tropo view`'s inline code. Apart from the server so the static export needs no server."""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources

from tropo.review import view as graph_view

ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
INLINE = re.compile(r"<(script|style)(\s[^>]*)?>(.*?)</\1>", re.S | re.I)


def inline_hashes(page: str) -> tuple[str, ...]:
    """CSP hashes of the inline scripts and styles of a page the package ships (`tropo
    view`'s): the graph frame may run exactly those, and nothing else inline."""
    bodies = [body for _, attrs, body in INLINE.findall(page)
              if "src=" not in attrs and "application/json" not in attrs]  # data blocks never run
    return tuple(sorted({"sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
                         for body in bodies}))


def graph_hashes() -> tuple[str, ...]:
    return inline_hashes(graph_view.template())


def asset(name: str) -> bytes:
    return resources.files("workbench").joinpath("static", name).read_bytes()
