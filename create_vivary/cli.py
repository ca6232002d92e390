"""The ``create-vivary`` command: init, doctor, adopt."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from create_vivary import adopt as adopt_mod
from create_vivary import doctor as doctor_mod
from create_vivary import init as init_mod
from create_vivary.plan import Refused, project_name
from create_vivary.presets import PRESETS
from create_vivary.scaffold import TemplateError
from tropo.cli.clijson import JsonErrorsGroup
from tropo.git import gitcli
from tropo.git.rooted import UnsafePath

_json = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
_dir = click.argument("target", type=click.Path(path_type=Path))


def _fail(as_json: bool, code: int, message: str) -> NoReturn:
    if as_json:
        click.echo(json.dumps({"ok": False, "error": message}, sort_keys=True))
    click.echo(f"create-vivary: {message}", err=True)
    sys.exit(code)


def _guarded(as_json: bool, fn: Callable[[], Any]) -> Any:
    """Run ``fn``; expected failures become one line on stderr and an exit code."""
    try:
        return fn()
    except ValueError as exc:
        if isinstance(exc, UnsafePath | TemplateError):
            _fail(as_json, 1, str(exc))
        _fail(as_json, 2, str(exc))
    except (Refused, gitcli.GitError) as exc:
        _fail(as_json, 1, str(exc))
    except OSError as exc:
        _fail(as_json, 1, f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))


def _emit(as_json: bool, payload: dict[str, Any], text: list[str]) -> None:
    click.echo(json.dumps(payload, sort_keys=True) if as_json else "\n".join(text))


def _files_text(files: list[dict[str, Any]]) -> list[str]:
    return [f"  {f['action']:9} {f['path']}" for f in files if f["action"] != "unchanged"]


@click.group(cls=JsonErrorsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
def main() -> None:
    """Create, adopt and check Vivary workspaces.

    Example: create-vivary init my-workspace --preset coding --commit
    """


@main.command()
@_dir
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default="coding", show_default=True)
@click.option("--project", help="Project label written into the nodes (default: folder name).")
@click.option("--force", is_flag=True, help="Write into a non-empty folder; overwrites scaffold files.")
@click.option("--commit", is_flag=True, help="Make the first commit, through the hooks.")
@click.option("--dry-run", is_flag=True, help="Print the plan and its hash; write nothing.")
@click.option("--auto", is_flag=True, help="No prompts (implies --yes).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_json
def init(
    target: Path,
    preset: str,
    project: str | None,
    force: bool,
    commit: bool,
    dry_run: bool,
    auto: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Lay down a new workspace in TARGET: files, git repository, hooks.

    Example: create-vivary init notes --preset second-brain --auto --yes --json --commit
    """
    plan = _guarded(
        as_json,
        lambda: init_mod.plan(target, preset, project_name(target, project), force=force, commit=commit),
    )
    body = plan.as_json()
    if dry_run:
        _emit(
            as_json,
            {"ok": True, "mode": "dry-run", **body},
            [
                f"create-vivary: plan for {plan.root} ({plan.preset})",
                *_files_text(body["files"]),
                f"plan: {plan.hash}",
            ],
        )
        return
    interactive = not (auto or yes or as_json) and sys.stdin.isatty()
    if interactive:
        click.echo("\n".join(_files_text(body["files"])), err=True)
        if not click.confirm(f"write {len(plan.files)} file(s) to {plan.root}?", err=True):
            _fail(False, 1, "cancelled; nothing written")
    result = _guarded(as_json, lambda: init_mod.apply(plan))
    _emit(
        as_json,
        {"ok": True, "mode": "applied", **result},
        [
            f"create-vivary: wrote {len(result['written'])} file(s) to {plan.root}",
            "hooks: " + ", ".join(f"{k} {v}" for k, v in result["hooks"].items()),
            *([f"commit: {result['commit']}"] if result["commit"] else []),
        ],
    )


@main.command()
@_dir
@click.option("--repair", is_flag=True, help="Plan safe fixes (apply them with --yes).")
@click.option("--yes", is_flag=True, help="With --repair: apply the safe fixes, then recheck.")
@_json
def doctor(target: Path, repair: bool, yes: bool, as_json: bool) -> None:
    """Check TARGET: baseline files, privacy (asked of git), graph, hooks, schema.

    Exit 0 when there are no errors (warnings say what a repair would add).
    Example: create-vivary doctor . --repair --yes --json
    """
    if not target.is_dir():
        _fail(as_json, 2, f"not a directory: {target}")
    report = _guarded(as_json, lambda: doctor_mod.diagnose(target))
    applied: list[dict[str, object]] = []
    if repair and yes:
        applied = [r.as_json() for r in doctor_mod.repair(report)]
        report = _guarded(as_json, lambda: doctor_mod.diagnose(target))
    payload = report.as_json()
    if repair:
        payload["repair"] = {
            "mode": "applied" if yes else "dry-run",
            "actions": applied or [r.as_json() for r in report.repairs],
        }
    lines = [f"doctor: {'ok' if report.ok else 'problems'} ({report.contract})"]
    if report.graph:
        g = report.graph
        lines.append(f"graph: {g['nodes']} node(s), {g['edges']} edge(s), {g['broken']} broken")
    lines += [f"error: {e}" for e in report.errors] + [f"warning: {w}" for w in report.warnings]
    if repair:
        lines += [f"repair [{a['status']}] {a['summary']}" for a in payload["repair"]["actions"]]
    _emit(as_json, payload, lines)
    sys.exit(0 if report.ok else 1)


@main.command()
@_dir
@click.option("--preset", type=click.Choice(sorted(PRESETS)), help="Default: guessed from content.")
@click.option("--project", help="Project label written into the nodes (default: folder name).")
@click.option("--yes", is_flag=True, help="Add the files (default: dry-run plan only).")
@click.option("--ratchet", is_flag=True,
              help="Write .vivary/hooks.toml so hooks refuse only new findings.")
@_json
def adopt(target: Path, preset: str | None, project: str | None, yes: bool, ratchet: bool,
          as_json: bool) -> None:
    """Add Vivary to an existing folder or repository; never edits, moves or deletes.

    Example: create-vivary adopt ~/notes --json        (plan)
             create-vivary adopt ~/notes --yes         (add the files)
             create-vivary adopt ~/repo --ratchet --yes  (old findings allowed, new refused)
    """
    plan = _guarded(as_json, lambda: adopt_mod.plan(target, preset, project_name(target, project),
                                                    ratchet))
    body = plan.as_json()
    head = [f"create-vivary: adopt {plan.root} as {plan.preset} ({plan.preset_reason})"]
    tail = [f"excluded: {e}" for e in plan.excluded] + [f"next: {f}" for f in plan.followups]
    if not yes:
        _emit(
            as_json,
            {"ok": True, "mode": "dry-run", **body},
            [
                *head,
                *(f"  create    {p}" for p in body["would_create"]),
                *tail,
                f"plan: {plan.hash} (rerun with --yes to apply)",
            ],
        )
        return
    result = _guarded(as_json, lambda: adopt_mod.apply(plan))
    report = _guarded(as_json, lambda: doctor_mod.diagnose(target))
    result |= {"mode": "applied", "ok": report.ok, "doctor": report.as_json()}
    _emit(
        as_json,
        result,
        [
            *head,
            f"created {len(result['created'])} file(s)",
            *tail,
            *(f"error: {e}" for e in report.errors),
        ],
    )
    sys.exit(0 if report.ok else 1)
