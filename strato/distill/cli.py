"""``strato distill extract|top|stats``: the workflow miner on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from strato.distill import service
from tropo import untrusted
from tropo.console import fail
from tropo.git import gitcli


def _options(fn: Any) -> Any:
    for option in reversed([
        click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=".",
                     show_default=True, help="The repository candidates are staged in."),
        click.option("--project", "projects", multiple=True, type=click.Path(path_type=Path),
                     help="A Claude Code project folder to read (default: this root's under "
                          "~/.claude/projects/)."),
        click.option("--codex", "codex", multiple=True, type=click.Path(path_type=Path),
                     help="A Codex sessions folder to read (default: ~/.codex/sessions)."),
        click.option("--all", "everything", is_flag=True,
                     help="Scan every project folder under --projects-root at once (calls made "
                          "anywhere count; Codex sessions only from --codex)."),
        click.option("--projects-root", type=click.Path(path_type=Path),
                     help="With --all: the folder of project folders (default: ~/.claude/projects)."),
        click.option("--min-count", type=click.IntRange(min=2), default=3, show_default=True,
                     help="Occurrences a workflow needs (across at least two sessions)."),
        click.option("--window-days", type=click.IntRange(min=1), help="Only calls this recent."),
        click.option("--json", "as_json", is_flag=True, help="Print JSON (stable keys)."),
    ]):
        fn = option(fn)
    return fn


def _setup(root: Path, projects: tuple[Path, ...], codex: tuple[Path, ...], everything: bool,
           projects_root: Path | None) -> tuple[Path, service.Sources]:
    top = gitcli.toplevel(root) if root.is_dir() else None
    if top is None:
        fail(f"{root} is not inside a git work tree; pass --root", code="not_a_repository",
             prog="strato distill")
    if projects_root is not None and not everything:
        fail("--projects-root is read only with --all", prog="strato distill")
    if everything and projects:
        fail("--all scans every project folder: give --project or --all, not both", prog="strato distill")
    if everything:
        projects_root = projects_root or service.default_projects_root()
    for folder in (*projects, *codex, *([projects_root] if projects_root else [])):
        if not folder.is_dir():
            fail(f"no such transcript folder: {folder}", prog="strato distill")
    if projects_root is not None:
        return top, service.all_projects(projects_root, list(codex))
    default = service.default_sources(top)
    return top, service.Sources(list(projects) or default.claude,
                                list(codex) or ([] if projects else default.codex))


@click.group("distill")
def distill() -> None:
    """Mine agent transcripts (Claude Code, Codex) for workflows that earned a skill.

    \b
    Examples:
      strato distill stats --json
      strato distill top --project ~/.claude/projects/-home-me-repo
      strato distill stats --all --projects-root ~/.claude/projects
      strato distill extract --min-count 3 --window-days 30   # stages candidates
      strato heartbeat apply skill-0123456789ab                # a person decides
    """


@distill.command("stats")
@_options
def stats_command(root: Path, projects: tuple[Path, ...], codex: tuple[Path, ...], everything: bool,
                  projects_root: Path | None, min_count: int, window_days: int | None,
                  as_json: bool) -> None:
    """Count files, lines, calls and what was skipped; stages nothing.

    Example: strato distill stats --json
    """
    top, sources = _setup(root, projects, codex, everything, projects_root)
    value = service.stats_document(top, sources, min_count, window_days)
    click.echo(json.dumps(value, sort_keys=True) if as_json else
               "\n".join(untrusted.line(f"{k}: {v}") for k, v in sorted(value.items())))


@distill.command("top")
@click.option("--n", "limit", type=click.IntRange(min=1), default=10, show_default=True)
@_options
def top_command(limit: int, root: Path, projects: tuple[Path, ...], codex: tuple[Path, ...],
                everything: bool, projects_root: Path | None, min_count: int, window_days: int | None,
                as_json: bool) -> None:
    """The most repeated workflows; stages nothing.

    Example: strato distill top --n 5 --project ~/.claude/projects/-home-me-repo
    """
    top, sources = _setup(root, projects, codex, everything, projects_root)
    value = service.top_document(top, sources, window_days, limit)
    rows = value["workflows"]
    click.echo(json.dumps(value, sort_keys=True) if as_json else
               "\n".join(f"{r['count']:>4}x {r['sessions']} sessions  "
                         + untrusted.line(" -> ".join(r["steps"])) for r in rows))


@distill.command("extract")
@_options
def extract_command(root: Path, projects: tuple[Path, ...], codex: tuple[Path, ...], everything: bool,
                    projects_root: Path | None, min_count: int, window_days: int | None,
                    as_json: bool) -> None:
    """Stage a SKILL.md candidate (both skill folders) for each third-strike workflow.

    Example: strato distill extract --min-count 3 --window-days 30
    """
    top, sources = _setup(root, projects, codex, everything, projects_root)
    staged = service.extract(top, sources, min_count, window_days)
    click.echo(json.dumps({"candidates": staged, "applied": False}, sort_keys=True) if as_json else
               "\n".join(f"{c['outcome']:<8} {c['id']}  {untrusted.line(c['title'])}" for c in staged)
               or "no candidates")
