"""Run receipts: the suite's ``vivary.run_receipt.v1`` lines, field by field against the
suite's own writer, appended atomically by many processes, and never changing a result."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest

from create_vivary.cli import main as create_main
from exo.cli import main as exo_main
from tests.support.console import run
from tests.support.requirements import missing, upstream_bin
from tropo.cli import receipts
from tropo.cli.main import main as tropo_main

BIN = Path(sys.executable).parent
UNCOMPARABLE = {"timestamp", "duration_ms", "version"}  # the clock and our own version
SECRET = "/home/someone/secret-query"
CLIS: dict[str, tuple[click.Group, str, str]] = {
    # tool: (our group, the suite's module, our default command)
    "tropo": (tropo_main, "tropo", "check"),
    "exo": (exo_main, "exo", "conflicts"),
    "create-vivary": (create_main, "create_vivary", "help"),
}

_SUITE_SCRIPT = """
import json, sys, time, importlib
mod = importlib.import_module(sys.argv[1])
if sys.argv[2] == "vocab":
    print(json.dumps({"known": sorted(mod.RECEIPT_KNOWN_FLAGS),
                      "valued": sorted(mod.RECEIPT_VALUE_FLAGS),
                      "commands": sorted(getattr(mod, "COMMANDS", None)
                                         or getattr(mod, "SUBCOMMANDS"))}))
    sys.exit(0)
for case in json.load(sys.stdin):
    mod._append_run_receipt(tool=case["tool"], version="x", argv=case["argv"],
                            started_at=time.monotonic(), exit_code=case["exit_code"],
                            receipt_path=sys.argv[2], receipt_source=case["source"],
                            error_type=case["error_type"])
"""


def _suite(module: str, arg: str, cases: list[dict[str, Any]] | None = None) -> str:
    python = upstream_bin("python")
    if python is None:
        missing("upstream suite not installed: run `make upstream` to compare")
    proc = subprocess.run([str(python), "-I", "-c", _SUITE_SCRIPT, module, arg], check=True,
                          input=json.dumps(cases or []), capture_output=True, text=True,
                          env={**os.environ, "VIVARY_RECEIPT_LOG": ""})
    return proc.stdout


def _invocations(tool: str, count: int, seed: int) -> list[list[str]]:
    """Command lines over the words both CLIs declare alike, plus words neither records
    (positional values, paths, values of valued options, an unknown option)."""
    group, module, default = CLIS[tool]
    ours = receipts.vocabulary(group, default)
    theirs = json.loads(_suite(module, "vocab"))
    commands = sorted(ours.commands & set(theirs["commands"]))
    both = ours.known & set(theirs["known"])
    agree = [f for f in sorted(both) if (f in ours.valued) == (f in theirs["valued"])]
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        # create-vivary turns a bare first word into `init`; ours refuses it (see docs)
        argv = [rng.choice(commands)] if tool == "create-vivary" or rng.random() < 0.8 else []
        for _ in range(rng.randrange(0, 6)):
            roll = rng.random()
            if roll < 0.45:
                flag = rng.choice(agree)
                if flag in ours.valued:
                    value = rng.choice([SECRET, "3", rng.choice(commands)])
                    argv += [f"{flag}={value}"] if rng.random() < 0.3 else [flag, value]
                else:
                    argv.append(flag)
            elif roll < 0.65:
                argv.append(rng.choice([SECRET, "my-item", rng.choice(commands)]))
            elif roll < 0.75:
                argv.append("--not-an-option-of-ours")
            elif roll < 0.85:
                argv += ["--receipt", "r.jsonl"] if rng.random() < 0.5 else ["--receipt=r.jsonl"]
            elif roll < 0.9:
                argv += ["--", rng.choice(commands), "--json"]
            else:
                argv.append(rng.choice(["-h", "--help", "--version"]))
        out.append(argv)
    return out


@pytest.mark.parametrize("tool", sorted(CLIS))
def test_receipts_match_the_suites_field_by_field(tool: str, tmp_path: Path) -> None:
    group, module, default = CLIS[tool]
    vocab = receipts.vocabulary(group, default)
    cases = [{"tool": tool, "argv": argv, "exit_code": code, "source": source,
              "error_type": "SystemExit" if code == 2 else None}
             for argv, code, source in zip(_invocations(tool, 60, seed=len(tool)),
                                           [0, 1, 2] * 20, ["flag", "env"] * 30, strict=True)]
    log = tmp_path / "suite.jsonl"
    _suite(module, str(log), cases)
    theirs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(theirs) == len(cases)
    for case, their in zip(cases, theirs, strict=True):
        line = receipts.encode(receipts.build(
            tool=tool, version="0", argv=case["argv"], vocab=vocab,
            exit_code=case["exit_code"], duration_ms=0, source=case["source"],
            error_type=case["error_type"]))
        mine = json.loads(line)
        assert set(mine) == set(their), case
        assert {k: v for k, v in mine.items() if k not in UNCOMPARABLE} == \
            {k: v for k, v in their.items() if k not in UNCOMPARABLE}, case["argv"]
        assert SECRET.encode() not in line and b"my-item" not in line
        assert b"not-an-option" not in line


def _workspace(root: Path) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "tropo.toml").write_text('[types.note]\nfolder = "notes"\n')
    (root / "notes").mkdir()
    (root / "notes" / "one.md").write_text("# One\n")


@pytest.mark.parametrize("argv", [["check", "--json"], ["--help"], ["--version"],
                                  ["check", "--lenient", "--quiet"], ["types", "--json"]])
def test_real_runs_of_both_tropos_leave_the_same_receipt(argv: list[str], tmp_path: Path,
                                                         upstream: Callable[[str], Path]) -> None:
    ws = tmp_path / "ws"
    _workspace(ws)
    lines = []
    for exe, log in ((upstream("tropo"), tmp_path / "theirs.jsonl"),
                     (BIN / "tropo", tmp_path / "ours.jsonl")):
        proc = subprocess.run([str(exe), *argv, "--receipt", str(log)], cwd=ws,
                              capture_output=True, text=True, check=False)
        (record,) = [json.loads(line) for line in log.read_text().splitlines()]
        assert record["exit_code"] == proc.returncode
        lines.append(record)
    ours, theirs = lines[1], lines[0]
    assert {k: v for k, v in ours.items() if k not in UNCOMPARABLE} == \
        {k: v for k, v in theirs.items() if k not in UNCOMPARABLE}


def test_the_environment_names_the_log_and_the_flag_wins(tmp_path: Path) -> None:
    env_log, flag_log = tmp_path / "env.jsonl", tmp_path / "flag.jsonl"
    for extra in ([], ["--receipt", str(flag_log)]):
        assert run("exo", "--help", *extra, env={"VIVARY_RECEIPT_LOG": str(env_log)}).returncode == 0
    assert json.loads(env_log.read_text())["receipt_source"] == "env"
    assert json.loads(flag_log.read_text())["receipt_source"] == "flag"
    assert len(env_log.read_text().splitlines()) == 1


_APPENDER = """
import sys
from tropo.cli import receipts
path, who = sys.argv[1], int(sys.argv[2])
for n in range(40):
    receipts.append(path, receipts.encode({"who": who, "n": n, "pad": "x" * 6000}))
"""


def test_many_processes_append_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "deep" / "receipts.jsonl"  # the folders do not exist yet
    procs = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(log), str(who)])
             for who in range(12)]
    assert all(p.wait() == 0 for p in procs)
    records = [json.loads(line) for line in log.read_bytes().split(b"\n") if line]
    assert sorted((r["who"], r["n"]) for r in records) == \
        [(who, n) for who in range(12) for n in range(40)]
    assert log.read_bytes().endswith(b"\n")


def test_a_torn_last_line_is_closed_not_lost(tmp_path: Path) -> None:
    log = tmp_path / "r.jsonl"
    log.write_bytes(b'{"ok":true}\n{"schema":"vivary.run_receipt.v1","too')
    proc = subprocess.run([str(BIN / "tropo"), "--help", "--receipt", str(log)],
                          capture_output=True, check=False)
    assert proc.returncode == 0
    lines = log.read_bytes().split(b"\n")
    assert lines[:2] == [b'{"ok":true}', b'{"schema":"vivary.run_receipt.v1","too']
    assert json.loads(lines[2])["command"] == "help" and lines[3] == b""


def _bad_targets(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    real = tmp_path / "real.jsonl"
    real.write_text("earlier\n")
    (tmp_path / "link.jsonl").symlink_to(real)
    (tmp_path / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "adir").mkdir()
    (tmp_path / "plain").write_text("")
    return {
        "symlink": (tmp_path / "link.jsonl", "receipt path must not be a symlink"),
        "symlinked folder": (tmp_path / "linkdir" / "r.jsonl",
                             "receipt path must not contain a symlink or junction directory"),
        "fifo": (tmp_path / "fifo.jsonl", "receipt path must be a regular file"),
        "directory": (tmp_path / "adir", "receipt path must be a regular file"),
        "under a file": (tmp_path / "plain" / "r.jsonl",
                         "could not write receipt; check that the receipt path is a writable "
                         "regular file"),
    }


@pytest.mark.parametrize("case", ["symlink", "symlinked folder", "fifo", "directory",
                                  "under a file"])
def test_a_bad_log_is_one_line_and_never_changes_the_result(case: str, tmp_path: Path) -> None:
    target, message = _bad_targets(tmp_path)[case]
    ws = tmp_path / "ws"
    _workspace(ws)
    plain = run("tropo", "check", "--json", cwd=ws)
    proc = run("tropo", "check", "--json", "--receipt", target, cwd=ws)
    assert (proc.returncode, proc.stdout) == (plain.returncode, plain.stdout)
    assert proc.stderr.strip().splitlines()[-1] == f"tropo: receipt: {message}"
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "real.jsonl").read_text() == "earlier\n"
    assert (tmp_path / "plain").read_text() == ""


def test_receipt_without_a_value_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([str(BIN / "tropo"), "--receipt"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "--receipt" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_receipt_option_is_on_every_cli_help() -> None:
    for tool in CLIS:
        proc = run(tool, "--help")
        assert proc.returncode == 0
        out = proc.stdout
        assert "--receipt PATH" in out and "VIVARY_RECEIPT_LOG" in out
