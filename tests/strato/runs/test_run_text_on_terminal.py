"""`strato flow show` / `next` / `audit` print a run's text: its steps' `do`, its inputs,
the reasons an attempt failed, the reason it was cancelled. A run ref can come from
another clone or an MCP client, so on a terminal none of that reaches it raw."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.repos import commit_all, write_files
from tests.support.terminal import BIN, on_terminal

CLIPBOARD, ERASE = "\x1b]52;c;ZXZpbA==\x07", "\x1b[2K"
SPEC = r"""version: 1
contracts:
  Out: {ok: boolean}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${work.output}", contract: Out}
    steps:
      - id: work
        do: "Say ok\e]52;c;ZXZpbA==\a\e[2K\u034f about ${input.topic}"
        out: Out
"""
RAW = ("\x1b", "\x07", "\u034f", "\u3164")


def strato_json(ws: Path, *args: str) -> dict[str, object]:
    proc = subprocess.run([str(BIN / "strato"), *args, "--json"], cwd=ws, capture_output=True, text=True,
                          check=False)
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def shown(ws: Path, *args: str) -> str:
    _, out = on_terminal("strato", "flow", *args, cwd=ws)
    assert "Traceback" not in out, out
    assert not [raw for raw in RAW if raw in out], repr(out)
    return out


def test_a_runs_text_reaches_the_terminal_escaped(repo_dir: Path) -> None:
    write_files(repo_dir, {"spec.yaml": SPEC})
    commit_all(repo_dir, "spec")
    strato_json(repo_dir, "flow", "plan", "spec.yaml", "--input", f"topic=T{CLIPBOARD}\u3164", "--id", "r1")
    for command in ("show", "next"):
        out = shown(repo_dir, command, "r1")
        assert "Say okU+001B]52;c;ZXZpbA==U+0007U+001B[2KU+034F about TU+001B]52;c;ZXZpbA==U+0007U+3164" in out

    [ready] = strato_json(repo_dir, "flow", "show", "r1")["ready"]  # type: ignore[misc]
    result = json.dumps({"failure": f"boom{CLIPBOARD}{ERASE}"})
    _, said = on_terminal("strato", "flow", "done", "r1", "work", "--token", ready["dispatchToken"],
                          "--result", result, cwd=repo_dir)
    assert not [raw for raw in RAW if raw in said], repr(said)
    out = shown(repo_dir, "show", "r1")
    assert "tried  work #1 failed -> retried  agent reported failure: boomU+001B]52;c;ZXZpbA==U+0007" in out
    assert "boomU+001B]52;c;ZXZpbA==U+0007U+001B[2K" in shown(repo_dir, "audit", "r1")

    shown(repo_dir, "cancel", "r1", "--reason", f"bye{CLIPBOARD}")
    assert "failure byeU+001B]52;c;ZXZpbA==U+0007" in shown(repo_dir, "show", "r1")
