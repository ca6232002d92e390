"""Our console scripts run in this process through click's own runner, for tests where
the process boundary is not what the test proves: each run costs no interpreter start.

A test that proves something about processes (exit on a signal, a detached runner, a hook
git starts, an isolated interpreter) runs the real script instead: `BIN / name`."""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import click
from click.testing import CliRunner

BIN = Path(sys.executable).parent
ENTRY_POINTS = {
    "tropo": "tropo.cli.main:main",
    "strato": "strato.cli:main",
    "exo": "exo.cli:main",
    "create-vivary": "create_vivary.cli:main",
    "vivary": "vivary.cli:main",
}


def command(name: str) -> click.Command:
    """The click command a console script named `name` runs."""
    module, _, attribute = ENTRY_POINTS[name].partition(":")
    found: click.Command = getattr(importlib.import_module(module), attribute)
    return found


def run(
    name: str,
    *args: str | Path,
    cwd: Path | None = None,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`name ARGS...` run in process, answered as `subprocess.run(..., text=True)` would:
    the exit code, stdout and stderr as text, nothing raised for a non-zero exit."""
    runner = CliRunner()
    with contextlib.chdir(cwd or Path.cwd()):
        result = runner.invoke(
            command(name), [str(a) for a in args], input=input, env=dict(env or {}),
            catch_exceptions=True, prog_name=name,
        )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    argv = [name, *map(str, args)]
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)


def run_process(
    name: str, *args: str | Path, cwd: Path | None = None, input: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`name ARGS...` as a real process (the console script beside this interpreter)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([str(BIN / name), *map(str, args)], cwd=cwd, input=input, env=full_env,
                          capture_output=True, text=True, check=False)
