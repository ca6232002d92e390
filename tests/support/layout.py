"""Where the project's code is: the checkout's root and its top-level packages, in the
order of docs/architecture.md's layers."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("tropo", "strato", "exo", "workbench", "hooks", "create_vivary", "vivary")
