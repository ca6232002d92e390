"""Run `strato decide --governed --json` over many request files in one process of
whichever interpreter runs this script: ours or vivary-strato's. Both are imported as
`strato`; the upstream module has `main` at its top, ours under `strato.cli`.

Input on stdin: a JSON list of request file paths. Output: a JSON list of
{"stdout", "code"} in the same order.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Callable
from typing import Any

import strato


def _entry() -> Callable[[list[str]], Any]:
    upstream = getattr(strato, "main", None)
    if upstream is not None:
        return upstream  # type: ignore[no-any-return]
    from strato.cli import main

    return lambda argv: main(argv, prog_name="strato")


def run(paths: list[str]) -> list[dict[str, Any]]:
    entry = _entry()
    results = []
    for path in paths:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry(["decide", "--governed", "--json", path])
            except SystemExit as stop:
                code = stop.code
        results.append({"stdout": out.getvalue(), "code": code if code is not None else 0})
    return results


if __name__ == "__main__":
    json.dump(run(json.load(sys.stdin)), sys.stdout)
