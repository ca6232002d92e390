"""`vivary serve --export-demo DIR`: the demo as static files that open from disk or any
web server. The page is the same; the answers it would ask the server for are written
beside it as one script (a page opened from a file cannot fetch), and the policy the
server would send is a meta tag."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.assets import ASSETS, asset, graph_hashes
from workbench.demo import DemoSource
from workbench.guards import Served

MARKER = ".vivary-demo-export"
HOOK = "<!-- static-data -->"


class ExportRefused(Exception):
    """DIR holds something else: nothing is written (exit 1)."""


def export_demo(target: Path) -> list[Path]:
    """Write the static demo into ``target`` (new, empty, or a previous export)."""
    ours = (target / MARKER).is_file()
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not ours)):
        raise ExportRefused(f"--export-demo {target}: not an empty folder or an earlier export; "
                            "choose another")
    views = DemoSource.recorded().static_views()
    policy = Served(0, "", inline_hashes=graph_hashes()).csp().replace("; frame-ancestors 'none'", "")
    page = asset("index.html").decode().replace(
        HOOK, f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
              '<script src="assets/static-data.js"></script>')
    data = json.dumps(views, sort_keys=True).replace("<", "\\u003c")
    files = {"index.html": page.encode(), MARKER: b"vivary serve --export-demo\n",
             "assets/static-data.js": f"window.VIVARY_STATIC = {data};\n".encode(),
             **{f"assets/{name}": asset(name) for name in ASSETS}}
    written = []
    for rel, content in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written
