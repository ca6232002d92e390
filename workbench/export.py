"""`vivary serve --export-demo DIR`: the demo as static files that open from disk or any
web server. The page is the same; the answers it would ask the server for are written
beside it as one script (a page opened from a file cannot fetch), and the policy the
server would send is a meta tag."""

from __future__ import annotations

import json
import os
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
    ours = (target / MARKER).is_file() and not (target / MARKER).is_symlink()
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
    if (link := _link_inside(target, files)) is not None:
        raise ExportRefused(f"--export-demo {target}: {link} is a symbolic link (the export writes only "
                            "inside the folder); remove it or choose another folder")
    written = []
    for rel, content in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW: a link planted after the check above is refused, never written through
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        written.append(path)
    return written


def _link_inside(target: Path, files: dict[str, bytes]) -> Path | None:
    """The first symbolic link among the paths the export would write (or their folders
    inside ``target``): writing through one would put files outside the folder."""
    for rel in files:
        parts = Path(rel).parts
        for depth in range(1, len(parts) + 1):
            path = target.joinpath(*parts[:depth])
            if path.is_symlink():
                return path
    return None
