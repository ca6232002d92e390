"""The ``create-vivary`` command: init, doctor, adopt."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from create_vivary import adopt as adopt_mod
from create_vivary import capabilities as caps
from create_vivary import doctor as doctor_mod
from create_vivary import init as init_mod
from create_vivary import journal, minimal, thin, thin_adopt, thin_journal, thin_report, trend, wizard
from create_vivary import record as record_mod
from create_vivary.plan import Refused, project_name
from create_vivary.presets import PRESETS
from create_vivary.scaffold import TemplateError
from tropo.cli.receipts import ReceiptGroup
from tropo.fs.rooted import UnsafePath, write_within
from tropo.git import gitcli

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


class _BareTargetGroup(ReceiptGroup):
    """A first word that names no command is init's target, as in create-vivary 0.4.3:
    ``create-vivary DIR`` is its init, which here is ``init --minimal``. A folder that
    shares a command's name is given as ``./doctor`` (or after ``init``)."""

    def route(self, argv: list[str]) -> list[str]:
        if argv and not argv[0].startswith("-") and argv[0] not in self.commands:
            return ["init", "--minimal", *argv]
        return argv


@click.group(cls=_BareTargetGroup, receipt_tool="create-vivary", receipt_default="help",
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
@_dir
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
@_json
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
        _fail(as_json, 2, f"--{given[0].replace('_', '-')} belongs to the thin seed: add --minimal")
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


def _answers(seed: dict[str, Any], auto: bool, dry_run: bool, as_json: bool) -> wizard.Answers:
    return wizard.Answers(storage=seed["storage"], provider=seed["provider"], memory=seed["memory"],
                          size=seed["size"], privacy=seed["privacy"], auto=auto,
                          no_wizard=seed["no_wizard"], dry_run=dry_run, as_json=as_json)


def _init_minimal(target: Path, preset: str, project: str | None, commit: bool, dry_run: bool,
                  auto: bool, as_json: bool, seed: dict[str, Any]) -> None:
    """create-vivary 0.4.3's init: same checks, same files, same report (its --yes only
    confirms installs, and we install nothing)."""
    adapters = tuple(seed["adapter"])
    root = _guarded(as_json, lambda: minimal.resolve_target(target))
    _guarded(as_json, lambda: minimal.check_empty(root))
    choice = wizard.decide(_answers(seed, auto, dry_run, as_json), command="init")
    plan = _guarded(as_json, lambda: minimal.plan(target, preset, adapters, seed["active_context"],
                                                  choice, project))
    done: dict[str, Any] = {}
    if not dry_run:
        _guarded(as_json, lambda: minimal.apply(plan, lambda: _healthy(plan.root)))
        if commit:
            done = _guarded(as_json, lambda: init_mod.commit_seed(plan.root, list(plan.files), preset))
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
    problems = _problems(root)
    if problems:
        raise Refused("doctor failed after init: " + "; ".join(problems))


@main.command(name="wizard")
@_dir
@click.option("--auto", is_flag=True, help="Ask nothing; pick from the hints.")
@click.option("--yes", is_flag=True, help="Accepted for create-vivary 0.4.3 compatibility.")
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@_storage_options
@_json
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
    root = _guarded(as_json, lambda: minimal.resolve_target(target))
    decided_by_flags = (auto or yes or seed["no_wizard"] or answers.any_storage_flag()
                        or seed["memory"] is not None)
    if not sys.stdin.isatty() and not decided_by_flags:
        _fail(as_json, 2, "wizard asks at a terminal; without one give --auto, --no-wizard "
                          "or the choices (--storage, --memory, ...)")
    choice = wizard.decide(answers, command="wizard")
    files = thin.config_files(choice, always_storage=True)
    ignore = root / ".gitignore"
    rules = thin.with_memory_rules(
        ignore.read_bytes() if ignore.is_file() and not ignore.is_symlink() else None, choice.memory)
    if not dry_run:
        writes = {**files, **({".gitignore": rules} if rules is not None else {})}
        _guarded(as_json, lambda: [write_within(root, rel, data) for rel, data in writes.items()])
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
@_json
def capabilities_command(preset: str, as_json: bool) -> None:
    """List the optional capabilities and whether this install provides each.

    \b
    Example: create-vivary capabilities --preset writing --json
    """
    rep = caps.report(preset)
    click.echo(json.dumps(rep, indent=2) if as_json else "\n".join(caps.lines(rep)))


@main.command()
@_dir
@click.option("--repair", is_flag=True, help="Plan safe fixes (apply them with --yes).")
@click.option("--yes", is_flag=True, help="With --repair: apply the safe fixes, then recheck.")
@click.option("--trend", "trend_", is_flag=True,
              help="Compare with the previous --trend run and store this one (the only write).")
@click.option("--repo-root", type=click.Path(path_type=Path),
              help="Accepted for create-vivary 0.4.3 compatibility; our tropo is built in.")
@_json
def doctor(target: Path, repair: bool, yes: bool, trend_: bool, repo_root: Path | None,
           as_json: bool) -> None:
    """Check TARGET: baseline files, privacy (asked of git), graph, hooks, schema.

    Exit 0 when there are no errors (warnings say what a repair would add).

    \b
    Example: create-vivary doctor . --repair --yes --json
             create-vivary doctor . --trend
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
    lines += [f"tolerated: {t}" for t in report.tolerated]
    if repair:
        lines += [f"repair [{a['status']}] {a['summary']}" for a in payload["repair"]["actions"]]
    if trend_:
        lines += _trend(report, payload, dry_run=repair and not yes)
    _emit(as_json, payload, lines)
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


@main.command()
@_dir
@click.option("--preset", type=click.Choice(sorted(PRESETS)), help="Default: guessed from content.")
@click.option("--project", help="Project label written into the nodes (default: folder name).")
@click.option("--yes", is_flag=True, help="Add the files (default: dry-run plan only).")
@click.option("--plan", "approved", metavar="HASH",
              help="The plan hash of the dry-run you approved; required with --yes.")
@click.option("--recover", metavar="PLAN_HASH",
              help="Plan taking back an interrupted adopt of PLAN_HASH (apply: --yes --plan).")
@click.option("--ratchet", is_flag=True,
              help="Write .vivary/hooks.toml so hooks refuse only new findings.")
@click.option("--adapter", "adapters", multiple=True, type=click.Choice(sorted(thin.ADAPTERS)),
              help="Add one runtime skill as create-vivary 0.4.3 does (repeat for both).")
@click.option("--minimal", is_flag=True,
              help="create-vivary 0.4.3's thin adoption: the thin seed, AGENTS.md and .gitignore patched.")
@click.option("--repo-root", type=click.Path(path_type=Path),
              help="Accepted for create-vivary 0.4.3 compatibility; our tropo is built in.")
@_json
def adopt(target: Path, preset: str | None, project: str | None, yes: bool, approved: str | None,
          recover: str | None, ratchet: bool, adapters: tuple[str, ...], minimal: bool,
          repo_root: Path | None, as_json: bool) -> None:
    """Add Vivary to an existing folder or repository; never edits, moves or deletes.

    The dry run prints a plan hash; --yes writes only with --plan <that hash>, and
    refuses when anything in the tree changed since.

    \b
    Example: create-vivary adopt ~/notes --json                    (plan)
             create-vivary adopt ~/notes --yes --plan sha256:...   (add the files)
             create-vivary adopt ~/repo --ratchet --yes --plan sha256:...
             create-vivary adopt ~/notes --adapter claude --adapter agents
             create-vivary adopt ~/notes --recover sha256:...      (after a crash)
             create-vivary adopt ~/repo --minimal --json           (0.4.3's thin adoption)
    """
    if minimal:
        if project is not None or ratchet:
            _fail(as_json, 2, f"--{'project' if project is not None else 'ratchet'} is not an "
                  "option of the thin adoption: drop --minimal or it")
        _adopt_minimal(target, preset, yes, approved, recover, adapters, as_json)
        return
    if recover is not None:
        _recover(target, recover, yes, approved, as_json)
        return
    plan = _guarded(as_json, lambda: adopt_mod.plan(target, preset, project_name(target, project),
                                                    ratchet, adapters))
    body = plan.as_json()
    head = [f"create-vivary: adopt {plan.root} as {plan.preset} ({plan.preset_reason})",
            f"repository: {plan.repository}"]
    tail = [f"excluded: {e}" for e in plan.excluded] + [f"note: {n}" for n in plan.notes]
    tail += [f"next: {f}" for f in plan.followups]
    tail += [f"conflict: {c['path']}: {c['reason']}" for c in plan.conflicts]
    if not yes:
        _emit(
            as_json,
            {"ok": not plan.conflicts, "mode": "dry-run", **body},
            [
                *head,
                *(f"  create    {p}" for p in body["would_create"]),
                *(f"  replace   {r.path} (generated by {r.before})" for r in plan.replaced),
                *tail,
                f"plan: {plan.hash} (apply: --yes --plan {plan.hash})",
            ],
        )
        sys.exit(1 if plan.conflicts else 0)
    if approved is None:
        _fail(as_json, 1, "apply requires --plan <hash> from the approved dry-run")
    result = _guarded(as_json, lambda: adopt_mod.apply(plan, approved))
    report = _guarded(as_json, lambda: doctor_mod.diagnose(plan.root))
    result |= {"mode": "applied", "ok": report.ok, "doctor": report.as_json()}
    _emit(
        as_json,
        result,
        [
            *head,
            f"created {len(result['created'])} file(s)",
            *tail,
            *(f"tolerated: {t}" for t in report.tolerated),
            *(f"error: {e}" for e in report.errors),
        ],
    )
    sys.exit(0 if report.ok else 1)


def _adopt_minimal(target: Path, preset: str | None, yes: bool, approved: str | None,
                   recover: str | None, adapters: tuple[str, ...], as_json: bool) -> None:
    """create-vivary 0.4.3's adopt: its plan, journal, report, refusals and exit codes."""
    def refused(exc: Exception) -> NoReturn:
        if as_json:
            click.echo(json.dumps({"ok": False, "error": str(exc)}))
        else:
            click.echo(f"create-vivary adopt: {exc}", err=True)
        sys.exit(1)

    doctor = None
    try:
        if recover is not None:
            root = minimal.resolve_target(target)
            if yes:
                rhash, rows = thin_journal.recover(root, recover, approved)
            else:
                rhash, rows, _ = thin_journal.recovery(root, recover)
            body = thin_report.recovery(root, recover, rhash, rows, yes)
        else:
            plan = thin_adopt.plan(target, preset, adapters)
            if yes:
                thin_journal.apply(plan, approved, _problems)
                doctor = doctor_mod.diagnose(plan.root)
            body = thin_report.planned(plan, "applied" if yes else "dry-run", doctor)
    except (Refused, UnsafePath, OSError, gitcli.GitError) as exc:
        refused(exc)
    click.echo(json.dumps(body, indent=2) if as_json else "\n".join(thin_report.text(body, doctor)))
    sys.exit(0 if body["ok"] else 1)


def _recover(target: Path, tx_hash: str, yes: bool, approved: str | None, as_json: bool) -> None:
    root: Path = _guarded(as_json, lambda: adopt_mod.repository_of(target.absolute())[0])
    if yes:
        rhash, rows = _guarded(as_json, lambda: journal.recover(root, tx_hash, approved))
    else:
        rhash, rows = _guarded(as_json, lambda: journal.recovery(root, tx_hash))
    mode = "recovered" if yes else "recovery-dry-run"
    _emit(
        as_json,
        {"ok": True, "mode": mode, "root": str(root), "plan_hash": tx_hash,
         "recovery_plan_hash": rhash, "recovery_actions": rows},
        [
            f"create-vivary: {'took back' if yes else 'would take back'} the interrupted adopt "
            f"of {tx_hash}",
            *(f"  {r['operation']:14} {r['path']}" for r in rows),
            *([] if yes else [f"recovery plan: {rhash} (apply: --recover {tx_hash} --yes --plan {rhash})"]),
        ],
    )


@main.command(name="record")
@_dir
@click.argument("record")
@click.option("--from", "source", required=True, type=click.Path(path_type=Path),
              help="The complete UTF-8 Markdown record to propose.")
@click.option("--capsule", required=True, type=click.Path(path_type=Path),
              help="The Task Capsule JSON of the work (tropo find --governed).")
@click.option("--yes", is_flag=True, help="Apply the approved plan (default: dry-run).")
@click.option("--plan", "approved", metavar="HASH",
              help="The plan hash of the dry-run you approved; required with --yes.")
@click.option("--repo-root", type=click.Path(path_type=Path),
              help="Accepted for create-vivary 0.4.3 compatibility; our tropo is built in.")
@_json
def record_command(target: Path, record: str, source: Path, capsule: Path, yes: bool,
                   approved: str | None, repo_root: Path | None, as_json: bool) -> None:
    """Propose (or, approved, add) one record under .vivary/records/ of a thin workspace.

    \b
    Example: tropo find --governed "what changed" --root ws > capsule.json
             create-vivary record ws changes/first-slice.md --from slice.md --capsule capsule.json
             create-vivary record ws changes/first-slice.md --from slice.md \\
                 --capsule capsule.json --yes --plan sha256:...
    """
    plan = _guarded(as_json, lambda: record_mod.plan(target, record, source, capsule, _problems))
    if yes:
        _guarded(as_json, lambda: record_mod.apply(plan, approved, _problems))
    body = {"ok": True, **plan.as_json(), "applied": yes}
    _emit(as_json, body, [
        f"create-vivary record: {'applied' if yes else 'would apply'} one {plan.action} to {plan.path}",
        f"capsule: {plan.capsule['id']} ({plan.capsule['fingerprint']})",
        f"source: {plan.source}",
        f"before: {plan.before_hash or 'absent'}",
        f"after: {body['after_hash']}",
        f"plan_hash: {plan.hash}",
    ])


def _problems(root: Path) -> list[str]:
    return doctor_mod.diagnose(root).errors
