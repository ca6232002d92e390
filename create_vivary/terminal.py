"""What create-vivary's commands share: `--json`, the TARGET folder, expected failures
as one line and an exit code, the file list of a plan, the doctor's verdict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from create_vivary import doctor as doctor_mod
from create_vivary.plan import Refused
from create_vivary.scaffold import TemplateError
from tropo.console import REFUSED, USAGE, fail
from tropo.fs.rooted import UnsafePath
from tropo.git import gitcli

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
target_argument = click.argument("target", type=click.Path(path_type=Path))


def guarded(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; expected failures become one line on stderr and an exit code."""
    try:
        return fn()
    except ValueError as exc:
        if isinstance(exc, UnsafePath | TemplateError):
            fail(str(exc), REFUSED)
        fail(str(exc), USAGE)
    except (Refused, gitcli.GitError) as exc:
        fail(str(exc), REFUSED)
    except OSError as exc:
        fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), REFUSED)


def files_text(files: list[dict[str, Any]]) -> list[str]:
    return [f"  {f['action']:9} {f['path']}" for f in files if f["action"] != "unchanged"]


def doctor_problems(root: Path) -> list[str]:
    return doctor_mod.diagnose(root).errors
