"""Run many ``verify`` invocations in one interpreter: the suite's ``ozone`` when it is
importable (the oracle's Python), else our ``vivary`` front door. Reads a JSON list of
``{"argv": [...], "stdin": TEXT|null}`` on stdin; prints a JSON list of ``{"code",
"stdout", "stderr"}``."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Callable


def _entry() -> Callable[[list[str]], object]:
    try:
        import ozone  # the suite's review layer
    except ImportError:
        from vivary.cli import main

        return lambda argv: main.main(args=argv, prog_name="vivary", standalone_mode=True)
    entry: Callable[[list[str]], object] = ozone.main
    return entry


def _run(entry: Callable[[list[str]], object], argv: list[str], stdin: str | None) -> dict[str, object]:
    raw, err = io.BytesIO(), io.StringIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    real_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry(argv)
            except SystemExit as exc:
                code = exc.code
            out.flush()
    finally:
        sys.stdin = real_stdin
    return {"code": code or 0, "stdout": raw.getvalue().decode(), "stderr": err.getvalue()}


def main() -> None:
    entry = _entry()
    cases = json.load(sys.stdin)
    print(json.dumps([_run(entry, case["argv"], case.get("stdin")) for case in cases]))


if __name__ == "__main__":
    main()
