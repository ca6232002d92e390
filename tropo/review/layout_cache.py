"""Layouts of ``tropo view``'s page kept under ``.git/vivary/layouts.v1/``, by fingerprint.

Laying out 20,000 nodes (layers, crossing reduction) takes a second or more; the same
nodes and edges always get the same layout, so both ``tropo view`` and the workbench's
Graph view compute it once per graph (:func:`tropo.review.view.layout_key`) and read it
after. Who controls these bytes: anyone who can write the repository's ``.git``. A file
there only places nodes and names layer headers (the page shows both as text, never as
markup), and one of the wrong shape is ignored and computed afresh. Disposable, like the
graph cache: the oldest go first.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from tropo.fs.atomic import write_atomic
from tropo.fs.private import PlantedLink
from tropo.git import repo as gitrepo
from tropo.git.types import Repository
from tropo.review.view import Layout

FOLDER = "layouts.v1"
KEEP = 8  # layouts kept


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file, never through a link (a planted
    link to a device or a huge file would hang the read): OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return fh.read()


def _valid(raw: Any, count: int) -> Layout | None:
    """The layout in ``raw`` if it has the shape one has (``count`` positions), else None."""
    if not isinstance(raw, dict) or not isinstance(raw.get("pos"), list) or len(raw["pos"]) != count:
        return None
    pos = raw["pos"]
    headers = raw.get("headers")
    if not all(isinstance(p, list) and len(p) == 2 and all(type(c) is int for c in p) for p in pos):
        return None
    if not isinstance(headers, list) or not all(
            isinstance(h, dict) and set(h) == {"label", "x", "y"} and isinstance(h["label"], str)
            and type(h["x"]) is int and type(h["y"]) is int for h in headers):
        return None
    return [(x, y) for x, y in pos], headers


class LayoutCache:
    """The layouts of one repository (nothing kept when its private folder is refused)."""

    def __init__(self, repository: Repository) -> None:
        self.repository = repository

    def _folder(self, create: bool) -> Path | None:
        """The folder (a link planted on the way is refused: PlantedLink, raised)."""
        try:
            return gitrepo.private_dir(self.repository, FOLDER, create=create)
        except PlantedLink:
            raise
        except OSError:  # not writable: no cache
            return None

    def get(self, key: str, count: int) -> Layout | None:
        folder = self._folder(create=False)
        if folder is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            return _valid(json.loads(_read_regular(folder / f"{key}.json")), count)
        return None

    def put(self, key: str, layout: Layout) -> None:
        folder = self._folder(create=True)
        if folder is None:
            return
        pos, headers = layout
        with contextlib.suppress(OSError):
            write_atomic(folder / f"{key}.json",
                         json.dumps({"pos": pos, "headers": headers}, separators=(",", ":")).encode(),
                         fsync=False)
            kept = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[KEEP:]:
                old.unlink(missing_ok=True)
