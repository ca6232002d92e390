"""The install command that adds an optional extra to *this* installation.

vivary-git is not published on a package index, so ``pip install 'vivary-git[serve]'``
finds nothing there (and a bare ``pip`` may belong to another environment). pip, pipx and
uv record where a distribution came from (PEP 610's ``direct_url.json``: a clone, a wheel
file, a URL), so the hint names that source and the interpreter that runs us: a line that
works as printed, from a clone or a built wheel.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from importlib import metadata
from urllib.parse import unquote, urlparse

DISTRIBUTION = "vivary-git"


def _source() -> tuple[str, bool] | None:
    """The URL this installation came from, and whether it is an editable install (the
    first record that says: a clone's own ``*.egg-info`` on ``sys.path`` says nothing)."""
    for dist in metadata.distributions(name=DISTRIBUTION):
        try:
            record = json.loads(dist.read_text("direct_url.json") or "null")
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("url"), str):
            dir_info = record.get("dir_info")
            return record["url"], isinstance(dir_info, dict) and dir_info.get("editable") is True
    return None


def extra_command(extra: str) -> str:
    """A shell command that installs ``extra`` into the environment running this code."""
    found = _source()
    if found is None:  # from an index, one day: the name is the source
        target = shlex.quote(f"{DISTRIBUTION}[{extra}]")
    elif found[1]:  # a clone installed with -e stays editable
        target = "-e " + shlex.quote(f"{unquote(urlparse(found[0]).path)}[{extra}]")
    else:
        target = shlex.quote(f"{DISTRIBUTION}[{extra}] @ {found[0]}")
    python = shlex.quote(sys.executable)
    # a uv tool environment has no pip of its own; uv installs into it from outside
    has_pip = importlib.util.find_spec("pip") is not None
    installer = f"{python} -m pip install" if has_pip else f"uv pip install --python {python}"
    return f"{installer} {target}"
