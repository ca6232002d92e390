"""Run many ``tropo`` invocations of the suite's vivary-tropo in one interpreter (the
oracle's Python): reads a JSON list of ``{"cwd": DIR, "argv": [...]}`` on stdin and prints
a JSON list of ``{"code", "stdout"}``, each as the suite's console script would answer."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
from typing import Any


def _run(main: Any, cwd: str, argv: list[str]) -> dict[str, object]:
    out = io.StringIO()
    os.chdir(cwd)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return {"code": code or 0, "stdout": out.getvalue()}


def main() -> None:
    suite = importlib.import_module("tropo")  # vivary-tropo: one module with a `main(argv)`
    cases = json.load(sys.stdin)
    print(json.dumps([_run(suite.main, case["cwd"], case["argv"]) for case in cases]))


if __name__ == "__main__":
    main()
