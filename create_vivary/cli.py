"""The ``create-vivary`` command: init, wizard, capabilities and doctor here; adopt and
record in `create_vivary.adopt_cli`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from create_vivary import capabilities as caps
from create_vivary import doctor as doctor_mod
from create_vivary import init as init_mod
from create_vivary import minimal, thin, trend, wizard
from create_vivary.plan import Refused, project_name
from create_vivary.presets import PRESETS
from create_vivary.terminal import doctor_problems, files_text, guarded, json_option, target_argument
from tropo.cli.receipts import ReceiptGroup
from tropo.console import REFUSED, USAGE, emit, fail
from tropo.fs.rooted import UnsafePath, write_within


class _BareTargetGroup(ReceiptGroup):
    """A first word that names no command is init's target, as in create-vivary 0.4.3:
    ``create-vivary DIR`` is its init, which here is ``init --minimal``. A folder that
    shares a command's name is given as ``./doctor`` (or after ``init``)."""

    error_as_text = True  # the published create-vivary's error document: {"ok": false, "error": "..."}

    def route(self, argv: list[str]) -> list[str]:
        if argv and not argv[0].startswith("-") and argv[0] not in {*self.commands, *self.lazy}:
            return ["init", "--minimal", *argv]
        return argv


@click.group("create-vivary", cls=_BareTargetGroup, receipt_tool="create-vivary", receipt_default="help",
             lazy={"adopt": "create_vivary.adopt_cli:adopt",
                   "record": "create_vivary.adopt_cli:record_command"},
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vivary-git")
def main() -> None:
    """Create, adopt and check Vivary workspaces.

    A bare `create-vivary DIR [OPTIONS]` is `create-vivary init DIR --minimal [OPTIONS]`
    (create-vivary 0.4.3's default).

    Example: create-vivary init my-workspace --preset coding --commit
    """


_SEED_ONLY = ("adapter", "active_context", "storage", "provider", "memory", "size", "privacy",
              "no_wizard", "repo_root")


def _storage_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The storage and memory options of create-vivary 0.4.3's init and wizard."""
    for opt in reversed([
        click.option("--no-wizard", is_flag=True, help="Ask nothing; the flags or the defaults decide."),
        click.option("--storage", type=click.Choice(thin.STORAGES),
                     help="Storage tier (auto: files unless --privacy cloud)."),
        click.option("--provider", type=click.Choice(thin.PROVIDERS),
                     help="Storage provider (default lancedb)."),
        click.option("--memory", type=click.Choice(thin.MEMORIES),
                     help="Semantic memory policy (default none)."),
        click.option("--size", type=click.Choice(thin.SIZES), help="Size hint for --auto."),
        click.option("--privacy", type=click.Choice(thin.PRIVACIES), help="Data locality hint for --auto."),
        click.option("--repo-root", type=click.Path(path_type=Path),
                     help="Accepted for create-vivary 0.4.3 compatibility; our tropo is built in."),
    ]):
        fn = opt(fn)
    return fn


@main.command()
@target_argument
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default="coding", show_default=True)
@click.option("--minimal", is_flag=True,
              help="create-vivary 0.4.3's init: the five-file thin-v0.3 seed, no git until --commit.")
@click.option("--adapter", multiple=True, type=click.Choice(sorted(thin.ADAPTERS)),
              help="With --minimal: add one runtime skill (repeat for both).")
@click.option("--active-context", type=click.Choice(thin.ACTIVE_CONTEXTS),
              help="With --minimal: declare the optional active-context capability (coding).")
@click.option("--project", help="Project label written into the nodes (default: folder name).")
@click.option("--force", is_flag=True,
              help="Write into a non-empty folder; overwrites scaffold files (not with --minimal).")
@click.option("--commit", is_flag=True,
              help="Make the first commit through the hooks (with --minimal: git init and hooks too).")
@click.option("--dry-run", is_flag=True, help="Print the plan and its hash; write nothing.")
@click.option("--auto", is_flag=True, help="No prompts (implies --yes).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_storage_options
@json_option
def init(target: Path, preset: str, minimal: bool, project: str | None, force: bool, commit: bool,
         dry_run: bool, auto: bool, yes: bool, as_json: bool, **seed: Any) -> None:
    """Lay down a new workspace in TARGET: files, git repository, hooks.

    Our presets by default; --minimal writes create-vivary 0.4.3's thin seed instead.

    \b
    Example: create-vivary init notes --preset second-brain --auto --yes --json --commit
             create-vivary init ws --minimal --adapter claude --memory local --json
    """
    if minimal:
        _init_minimal(target, preset, project, commit, dry_run, auto, as_json, seed)
        return
    given = [name for name in _SEED_ONLY if seed[name] not in (None, (), False)]
    if given:
        fail(f"--{given[0].replace('_', '-')} belongs to the thin seed: add --minimal", USAGE)
    plan = guarded(lambda: init_mod.plan(target, preset, project_name(target, project),
                                         force=force, commit=commit))
    body = plan.as_json()
    if dry_run:
        emit(
            as_json,
            {"ok": True, "mode": "dry-run", **body},
            [
                f"create-vivary: plan for {plan.root} ({plan.preset})",
                *files_text(body["files"]),
                f"plan: {plan.hash}",
            ],
        )
        return
    interactive = not (auto or yes or as_json) and sys.stdin.isatty()
    if interactive:
        click.echo("\n".join(files_text(body["files"])), err=True)
        if not click.confirm(f"write {len(plan.files)} file(s) to {plan.root}?", err=True):
            fail("cancelled; nothing written", REFUSED)
    result = guarded(lambda: init_mod.apply(plan))
    emit(
        as_json,
        {"ok": True, "mode": "applied", **result},
        [
            f"create-vivary: wrote {len(result['written'])} file(s) to {plan.root}",
            "hooks: " + ", ".join(f"{k} {v}" for k, v in result["hooks"].items()),
            *([f"commit: {result['commit']}"] if result["commit"] else []),
        ],
    )


def _answers(seed: dict[str, Any], auto: bool, dry_run: bool, as_json: bool) -> wizard.Answers:
    return wizard.Answers(storage=seed["storage"], provider=seed["provider"], memory=seed["memory"],
                          size=seed["size"], privacy=seed["privacy"], auto=auto,
                          no_wizard=seed["no_wizard"], dry_run=dry_run, as_json=as_json)


def _init_minimal(target: Path, preset: str, project: str | None, commit: bool, dry_run: bool,
                  auto: bool, as_json: bool, seed: dict[str, Any]) -> None:
    """create-vivary 0.4.3's init: same checks, same files, same report (its --yes only
    confirms installs, and we install nothing)."""
    adapters = tuple(seed["adapter"])
    root = guarded(lambda: minimal.resolve_target(target))
    guarded(lambda: minimal.check_empty(root))
    choice = wizard.decide(_answers(seed, auto, dry_run, as_json), command="init")
    plan = guarded(lambda: minimal.plan(target, preset, adapters, seed["active_context"],
                                                  choice, project))
    done: dict[str, Any] = {}
    if not dry_run:
        guarded(lambda: minimal.apply(plan, lambda: _healthy(plan.root)))
        if commit:
            done = guarded(lambda: init_mod.commit_seed(plan.root, list(plan.files), preset))
    if as_json:
        report = {
            "ok": True, "root": str(plan.root), "contract": thin.CONTRACT, "preset": preset,
            "adapters": list(adapters), "storage": choice.storage, "provider": choice.provider,
            "memory": choice.memory,
            "memory_capability": caps.capability(caps.report(preset), f"memory:{choice.memory}"),
            "installed": [], "files": len(plan.files),
            "config": str(plan.root / thin.STORAGE_CONFIG) if choice.storage != "file" else None,
            "memory_config": str(plan.root / thin.MEMORY_CONFIG) if choice.memory != "none" else None,
            "dry_run": dry_run, **done,
        }
        click.echo(json.dumps(report, indent=2))
    else:
        verb = "would write" if dry_run else "wrote"
        click.echo(f"create-vivary: {verb} {len(plan.files)} file(s) to {plan.root}")
        if done:
            click.echo(f"commit: {done['commit']}")
    if choice.storage in ("embedded", "cloud") and not dry_run:
        click.echo(f"create-vivary: {thin.STORAGE_CONFIG} declares {choice.storage} storage; "
                   "nothing was installed", err=True)


def _healthy(root: Path) -> None:
    problems = doctor_problems(root)
    if problems:
        raise Refused("doctor failed after init: " + "; ".join(problems))


@main.command(name="wizard")
@target_argument
@click.option("--auto", is_flag=True, help="Ask nothing; pick from the hints.")
@click.option("--yes", is_flag=True, help="Accepted for create-vivary 0.4.3 compatibility.")
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@_storage_options
@json_option
def wizard_command(target: Path, auto: bool, yes: bool, dry_run: bool, as_json: bool,
                   **seed: Any) -> None:
    """Choose storage and memory for an existing workspace, asking at a terminal.

    Writes .vivary/storage.toml (and .vivary/memory.toml for a memory policy). Without a
    terminal it asks nothing: give --auto, --no-wizard or the choices as flags.

    \b
    Example: create-vivary wizard .                      (at a terminal)
             create-vivary wizard . --no-wizard --memory local --json
    """
    answers = _answers(seed, auto, dry_run, as_json)
    root = guarded(lambda: minimal.resolve_target(target))
    decided_by_flags = (auto or yes or seed["no_wizard"] or answers.any_storage_flag()
                        or seed["memory"] is not None)
    if not sys.stdin.isatty() and not decided_by_flags:
        fail("wizard asks at a terminal; without one give --auto, --no-wizard "
                          "or the choices (--storage, --memory, ...)", USAGE)
    choice = wizard.decide(answers, command="wizard")
    files = thin.config_files(choice, always_storage=True)
    ignore = root / ".gitignore"
    rules = thin.with_memory_rules(
        ignore.read_bytes() if ignore.is_file() and not ignore.is_symlink() else None, choice.memory)
    if not dry_run:
        writes = {**files, **({".gitignore": rules} if rules is not None else {})}
        guarded(lambda: [write_within(root, rel, data) for rel, data in writes.items()])
    if as_json:
        click.echo(json.dumps({
            "ok": True, "root": str(root), "storage": choice.storage, "provider": choice.provider,
            "memory": choice.memory, "installed": [],
            "config": str(root / thin.STORAGE_CONFIG),
            "memory_config": str(root / thin.MEMORY_CONFIG) if choice.memory != "none" else None,
            "dry_run": dry_run,
        }, indent=2))
    else:
        verb = "would write" if dry_run else "wrote"
        click.echo(f"create-vivary wizard: {verb} {len(files)} config file(s)")


@main.command(name="capabilities")
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default="coding", show_default=True)
@json_option
def capabilities_command(preset: str, as_json: bool) -> None:
    """List the optional capabilities and whether this install provides each.

    \b
    Example: create-vivary capabilities --preset writing --json
    """
    rep = caps.report(preset)
    click.echo(json.dumps(rep, indent=2) if as_json else "\n".join(caps.lines(rep)))


@main.command()
@target_argument
@click.option("--repair", is_flag=True, help="Plan safe fixes (apply them with --yes).")
@click.option("--yes", is_flag=True, help="With --repair: apply the safe fixes, then recheck.")
@click.option("--trend", "trend_", is_flag=True,
              help="Compare with the previous --trend run and store this one (the only write).")
@click.option("--repo-root", type=click.Path(path_type=Path),
              help="Accepted for create-vivary 0.4.3 compatibility; our tropo is built in.")
@json_option
def doctor(target: Path, repair: bool, yes: bool, trend_: bool, repo_root: Path | None,
           as_json: bool) -> None:
    """Check TARGET: baseline files, privacy (asked of git), graph, hooks, schema.

    Exit 0 when there are no errors (warnings say what a repair would add).

    \b
    Example: create-vivary doctor . --repair --yes --json
             create-vivary doctor . --trend
    """
    if not target.is_dir():
        fail(f"not a directory: {target}", USAGE)
    report = guarded(lambda: doctor_mod.diagnose(target))
    applied: list[dict[str, object]] = []
    if repair and yes:
        applied = [r.as_json() for r in doctor_mod.repair(report)]
        report = guarded(lambda: doctor_mod.diagnose(target))
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
    lines += [f"tolerated: {t}" for t in report.tolerated]
    if repair:
        lines += [f"repair [{a['status']}] {a['summary']}" for a in payload["repair"]["actions"]]
    if trend_:
        lines += _trend(report, payload, dry_run=repair and not yes)
    emit(as_json, payload, lines)
    sys.exit(0 if report.ok and payload["ok"] else 1)


def _trend(report: doctor_mod.DoctorReport, payload: dict[str, Any], *, dry_run: bool) -> list[str]:
    """Add ``trend`` to the report (and store this run), as create-vivary 0.4.3 does."""
    if dry_run:
        payload["trend"] = None
        payload["warnings"].append("doctor --trend skipped during repair dry-run; "
                                   "add --yes to write trend state")
        return ["trend: skipped during repair dry-run (add --yes to write state)"]
    now = trend.snapshot(report.root, report.graph, len(report.errors), len(report.warnings))
    try:
        payload["trend"], warning = trend.record(report.root, now)
    except (OSError, UnsafePath) as exc:
        payload |= {"trend": None, "ok": False}
        payload["errors"].append(f"doctor --trend: {exc}")
        return [f"error: doctor --trend: {exc}"]
    if warning:
        payload["trend_warning"] = warning
    return trend.lines(payload["trend"], warning)


