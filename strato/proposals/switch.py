"""Whether the heartbeat is on: the one rule, cheap enough for the post-commit hook.

``git config vivary.heartbeat false`` turns it off for one repository, ``git config
--global vivary.heartbeat false`` for every repository of a user, and
``VIVARY_HEARTBEAT=0`` for one shell. This module imports nothing heavy on purpose.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tropo.git import gitcli

KEY = "vivary.heartbeat"
OFF = {"0", "false", "no", "off"}


def enabled_in(config: Mapping[str, str]) -> bool:
    """The rule over already-read git config values and the environment."""
    if os.environ.get("VIVARY_HEARTBEAT", "").strip().lower() in OFF:
        return False
    return config.get(KEY, "true").strip().lower() not in OFF


def enabled(root: Path) -> bool:
    return enabled_in(gitcli.config_matching(root, r"^vivary\.heartbeat$"))
