"""Checks other parts hang on the pre-push and post-commit hooks.

Each entry is a ``"module:function"`` path resolved only when the hook runs, so a
hook stays cheap and this module imports nothing it does not need. A pre-commit check
takes the work tree root and returns problems (empty = pass); a pre-push check takes a
:class:`tropo.git.remote.Push` and returns problems, before anything is pushed
(``PRE_PUSH``) or once the refs that travel along are pushed and before git pushes
what was asked (``PRE_PUSH_AFTER_ALONG``); a post-commit action takes the work tree
root and must never fail the commit.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, cast

PRE_COMMIT: dict[str, str] = {"guard": "strato.guard.precommit:check"}
PRE_PUSH: dict[str, str] = {"graph": "hooks.graph:check", "guard": "strato.guard.prepush:check"}
PRE_PUSH_AFTER_ALONG: dict[str, str] = {"guard": "strato.guard.prepush:pins_pushed"}
# Refs that travel with a push merged with the remote's rather than pushed plainly, by
# prefix: a function taking the Push and returning warning lines.
PUSH_ALONG_MERGED: dict[str, str] = {"refs/notes/vivary/": "strato.guard.prepush:sync_notes"}
POST_COMMIT: dict[str, str] = {"heartbeat": "strato.heartbeat.runner:post_commit"}


def resolve(target: str) -> Callable[..., Any]:
    """Import ``"package.module:function"``."""
    module, _, attr = target.partition(":")
    fn = getattr(importlib.import_module(module), attr)
    if not callable(fn):
        raise TypeError(f"{target} is not callable")
    return cast(Callable[..., Any], fn)
