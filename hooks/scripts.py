"""The hook scripts we write: pure text, so "current" is a byte comparison."""

from __future__ import annotations

import shlex

MARKER = "# vivary-hook 1"
DEFAULT_HOOKS = ("pre-commit", "pre-push", "post-commit")  # post-commit adds ~4 ms (bench.heartbeat)
KNOWN_HOOKS = DEFAULT_HOOKS
CHAINED_SUFFIX = ".vivary-chained"


def render(name: str, python: str) -> str:
    """The script for hook ``name`` that runs our code through ``python``.

    It passes its own path so the runner finds the chained hook next to it, whatever
    directory git took it from. ``-I`` keeps the repository's own files (a ``hooks/``
    or ``tropo/`` folder, a ``bisect.py``) off ``sys.path``: hooks run in the work tree.
    git waits for a hook, and a commit must not wait for the heartbeat, so post-commit
    runs a chained hook (if there is one) in the foreground and our actions in the
    background, without waiting even for the interpreter to start.
    """
    head = (
        "#!/bin/sh\n"
        f"{MARKER}: installed by `vivary hooks install`; "
        "`vivary hooks uninstall` restores any hook it replaced\n"
    )
    runner = f"{shlex.quote(python)} -I -m hooks.run"
    if name == "post-commit":
        return (head + f'[ -e "$0{CHAINED_SUFFIX}" ] && {runner} post-commit-chained "$0" "$@"\n'
                f'{runner} post-commit-actions "$0" </dev/null >/dev/null 2>&1 &\nexit 0\n')
    return head + f'exec {runner} {name} "$0" "$@"\n'


def is_ours(text: str) -> bool:
    """Whether a hook file was written by some version of our installer."""
    lines = text.splitlines()
    return len(lines) > 1 and lines[1].startswith("# vivary-hook ")
