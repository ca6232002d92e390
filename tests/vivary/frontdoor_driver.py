"""Run many ``vivary`` invocations in one interpreter: the suite's front door when
``vivary_cli`` is importable (the oracle's Python), else ours. Reads a JSON list of
``{"cwd": DIR, "argv": [...]}`` on stdin and prints a JSON list of ``{"code", "stdout"}``.
Every verb of ours runs in process, create-vivary's included.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable


def _entry() -> Callable[[list[str]], object]:
    try:
        import vivary_cli  # the suite's front door
    except ImportError:
        from vivary.cli import main

        return lambda argv: main.main(args=argv, prog_name="vivary", standalone_mode=True)
    return vivary_cli.main


def _run(entry: Callable[[list[str]], object], cwd: str, argv: list[str]) -> dict[str, object]:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    os.chdir(cwd)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = entry(argv)
        except SystemExit as exc:
            code = exc.code
        out.flush()
    return {"code": code or 0, "stdout": raw.getvalue().decode()}


def main() -> None:
    entry = _entry()
    cases = json.load(sys.stdin)
    print(json.dumps([_run(entry, case["cwd"], case["argv"]) for case in cases]))


if __name__ == "__main__":
    main()
