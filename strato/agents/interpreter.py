"""The command line that starts this toolkit's own code in a new process: this
interpreter in isolated mode (``-I``). A detached runner starts in the work tree, where a
checked-out branch or an MCP client may have put ``strato/__init__.py``,
``subprocess.py`` or ``runpy.py``; isolated, Python puts neither that folder nor
``PYTHONPATH`` nor the user's site-packages on its path, so only the installed toolkit
runs (docs/security.md)."""

from __future__ import annotations

import sys


def own_python(*args: str) -> list[str]:
    """``[this interpreter, "-I", *args]``: for ``-m strato.…`` and ``-c`` launches."""
    return [sys.executable, "-I", *args]
