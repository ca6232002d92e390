"""A folder as a value: what `init` wrote, compared whole between two tools or two runs."""

from __future__ import annotations

import os
from pathlib import Path


def tree(base: Path) -> dict[str, bytes | str]:
    """Every path below ``base``: a file's bytes, a folder or a link by name."""
    out: dict[str, bytes | str] = {}
    for here, dirs, files in os.walk(base):
        for name in dirs + files:
            path = Path(here) / name
            rel = path.relative_to(base).as_posix()
            out[rel] = ("link" if path.is_symlink() else "dir" if path.is_dir()
                        else path.read_bytes())
    return out
