"""The private folder ``.git/vivary`` and every folder below it, reached symlink-safe.

Every cache, lock and record the toolkit keeps beside a repository lives under
``<git dir>/vivary``; this is the one place that finds it. Another agent in the
repository can write there too, so each folder on the way is checked by lstat: one that
is a symlink (planted to point outside) or not a folder is refused, and nothing is read
or written through it. That check and the use that follows are two steps: an agent that
swaps a folder for a link between them is not stopped (only opening every file relative
to a checked folder's descriptor would).

The git dir comes from the caller (``tropo.git`` finds it), so files need no git here.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

NAME = "vivary"


class Refusal(Exception):
    """An operation refused on purpose, with a stable ``code`` for ``--json`` output
    (the base of strato's ``Refused``, so a refusal raised here meets the same handlers)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class PlantedLink(Refusal):
    """A folder under ``.git/vivary`` that is a symlink or not a folder: not ours to use."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__("planted_link", f"{path} is {what}, not a folder of ours: refused (remove it)")


def private_folder(git_dir: Path, *parts: str, create: bool = False) -> Path:
    """``<git_dir>/vivary/parts...``, with ``vivary`` and each folder below it on the way
    checked by lstat: a symlink or a non-folder there is refused (:class:`PlantedLink`).
    With ``create``, missing folders are made (0700); without, the path is returned as
    soon as one is missing (a reader finds nothing there)."""
    assert all(name not in ("", ".", "..") and "/" not in name for name in parts), parts
    top = git_dir / NAME
    steps = [top]
    for name in parts:
        steps.append(steps[-1] / name)
    for here in steps:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(here, 0o700)
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            if create:
                raise
            return top.joinpath(*parts)
        if stat.S_ISLNK(mode):
            raise PlantedLink(here, "a symlink")
        if not stat.S_ISDIR(mode):
            raise PlantedLink(here, "not a folder")
    return steps[-1]
