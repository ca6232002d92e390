"""Running code in the upstream oracle's interpreter: vivary_core as a second opinion."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


def run_upstream(python: Path, script: str, payload: Any) -> Any:
    """Run `script` under the oracle's Python with `payload` as JSON on stdin; return
    the JSON it prints."""
    proc = subprocess.run(
        [str(python), "-c", script],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)
