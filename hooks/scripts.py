"""The hook scripts we write: pure text, so "current" is a byte comparison."""

from __future__ import annotations

import shlex

MARKER = "# vivary-hook 1"
DEFAULT_HOOKS = ("pre-commit", "pre-merge-commit", "pre-push")
KNOWN_HOOKS = (*DEFAULT_HOOKS, "post-commit")
CHAINED_SUFFIX = ".vivary-chained"
FIX = "run `vivary hooks install` (or bypass once with --no-verify)"


def render(name: str, python: str) -> str:
    """The script for hook ``name`` that runs our code through ``python``.

    It passes its own path so the runner finds the chained hook next to it, whatever
    directory git took it from. ``-I`` keeps the repository's own files (a ``hooks/``
    or ``tropo/`` folder, a ``bisect.py``) off ``sys.path``: hooks run in the work tree.
    When the interpreter is gone (its virtualenv removed), the hook says so in one line
    and what to run, instead of the shell's ``exec: ...: not found``.
    """
    py = shlex.quote(python)
    gone = shlex.quote(f"vivary: {name} hook: its Python {python} is gone; {FIX}")
    return (
        "#!/bin/sh\n"
        f"{MARKER}: installed by `vivary hooks install`; "
        "`vivary hooks uninstall` restores any hook it replaced\n"
        f"[ -x {py} ] || {{ echo {gone} >&2; exit 1; }}\n"
        f'exec {py} -I -m hooks.run {name} "$0" "$@"\n'
    )


def interpreter(text: str) -> str | None:
    """The Python an installed hook of ours runs (the word after ``exec``), if any."""
    for line in text.splitlines():
        if line.startswith("exec "):
            words = shlex.split(line)
            return words[1] if len(words) > 1 else None
    return None


def is_ours(text: str) -> bool:
    """Whether a hook file was written by some version of our installer."""
    lines = text.splitlines()
    return len(lines) > 1 and lines[1].startswith("# vivary-hook ")
