"""``strato heartbeat``: run it by hand, look at what it proposed, decide."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from strato.evals.promotion import PromotionError
from strato.evals.promotion import line as promotion_line
from strato.heartbeat import apply as decisions
from strato.heartbeat import deep as deep_review
from strato.heartbeat.engine import HeartbeatError, run
from strato.proposals import settings, store
from tropo import untrusted
from tropo.console import REFUSED, USAGE, emit, fail
from tropo.git import gitcli

root_option = click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=".",
                           show_default=True, help="Any folder inside the repository.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (stable keys).")


def _root(path: Path) -> Path:
    found = gitcli.toplevel(path) if path.is_dir() else None
    if found is None:
        fail(f"{path} is not inside a git work tree; pass --root", USAGE, code="not_a_repository",
             prog="strato heartbeat")
    return found


@click.group("heartbeat")
def heartbeat() -> None:
    """Distil what the last commits taught into proposals; nothing changes until you apply one.

    \b
    Examples:
      strato heartbeat run                 # the commits since the last heartbeat
      strato heartbeat run --since HEAD~20 --budget-ms 2000 --json
      strato heartbeat run --deep          # then one question per open proposal
      strato heartbeat status
      strato heartbeat show playbook-0123456789ab
      strato heartbeat apply playbook-0123456789ab   # creates branch heartbeat/<id>
      strato heartbeat reject orphan-0123456789ab
    """


@heartbeat.command("run")
@click.option("--since", metavar="REV", help="Read commits after REV (default: since the last run).")
@click.option("--budget-ms", type=click.IntRange(min=1), help="Skip the remaining checks after this long.")
@click.option("--deep", is_flag=True,
              help="Then ask about each open proposal on the terminal: apply, reject or skip.")
@root_option
@json_option
def run_command(since: str | None, budget_ms: int | None, deep: bool, root: Path, as_json: bool) -> None:
    """Run one heartbeat now and print its summary (at most three lines).

    With --deep (the weekly kind) every open proposal is then put to you, one at a
    time; nothing is applied or rejected without your answer, and the end of input
    (Ctrl-D) stops with the rest left open. --deep needs a terminal.

    \b
    Examples:
      strato heartbeat run
      strato heartbeat run --since HEAD~20 --budget-ms 2000 --json
    """
    top = _root(root)
    if deep and not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("--deep asks on a terminal, and stdin or stdout is not one; "
             "use `status`, `apply ID` and `reject ID` instead", prog="strato heartbeat")
    try:
        result = run(top, settings.load(top), since=since, budget_ms=budget_ms)
    except HeartbeatError as exc:
        fail(str(exc), USAGE, prog="strato heartbeat")
    text = "\n".join([*result["summary"], f"Report: {result['report']}"])
    if deep:
        if not as_json:
            click.echo(text)
        result["decisions"] = deep_review.review(top, _ask, click.echo)
        text = "\n".join(f"{d['answer']:<6} {d['id']}: {d['status']}" for d in result["decisions"]) \
            or "no decision taken"
    emit(as_json, result, text)


def _ask(text: str) -> str | None:
    click.echo(text, nl=False)
    line = sys.stdin.readline()
    return line if line else None


@heartbeat.command("status")
@root_option
@json_option
def status_command(root: Path, as_json: bool) -> None:
    """List staged proposals and their decisions.

    Example: strato heartbeat status --json
    """
    top = _root(root)
    value = store.summary(store.sidecar(top))
    rows, head = value["proposals"], value["last_head"]
    lines = [f"last heartbeat at {head[:12] if isinstance(head, str) else 'never'}; "
             f"{len(rows)} proposal(s)"]
    lines += [f"{untrusted.line(r['status']):<8} {untrusted.line(r['id'])}  {untrusted.line(r['title'])}"
              for r in rows]
    emit(as_json, value, "\n".join(lines))


@heartbeat.command("show")
@click.argument("pid", metavar="ID")
@root_option
@json_option
def show_command(pid: str, root: Path, as_json: bool) -> None:
    """Show one proposal: evidence and the exact files `apply` would write.

    Example: strato heartbeat show playbook-0123456789ab
    """
    try:
        record = store.get(store.sidecar(_root(root)), pid)
    except store.UnknownProposal as exc:
        fail(str(exc), USAGE, prog="strato heartbeat")
    shown = untrusted.line
    lines = [f"{shown(record['id'])} ({shown(record['revision'])}) [{shown(record['status'])}] "
             f"{shown(store.title(record))}"]
    lines += [f"  evidence: {shown(e)}" for e in record.get("evidence", [])]
    lines += [f"  promotion: {'passed' if e.get('passed') else 'refused'}: {promotion_line(e)}"
              for e in record.get("promotion", [])]
    if isinstance(record.get("rewrite"), dict):
        agent = shown(record["rewrite"].get("agent"))
        lines.append(f"  rewritten by agent {agent} (the draft is `title`/`files`)")
    for path, content in store.files(record).items():
        lines += [f"--- {shown(path)} (on {shown(str(record.get('base'))[:12])})",
                  untrusted.block(content.rstrip("\n"))]
    emit(as_json, record, "\n".join(lines))


@heartbeat.command("apply")
@click.argument("pid", metavar="ID")
@root_option
@json_option
def apply_command(pid: str, root: Path, as_json: bool) -> None:
    """Write the proposal on a new branch heartbeat/ID; your branch, index and files stay.
    A skill or playbook proposal must first pass your [promotion] eval, if you set one
    (docs/evals.md).
    A memory line goes to the private, git-ignored MEMORY.md instead (nothing committed).

    Example: strato heartbeat apply playbook-0123456789ab
    """
    try:
        result = decisions.apply(_root(root), pid)
    except (store.UnknownProposal, PromotionError) as exc:
        fail(str(exc), USAGE, prog="strato heartbeat")
    except (decisions.Refused, gitcli.GitError) as exc:
        fail(str(exc), REFUSED, prog="strato heartbeat")
    where = f"to {result['file']}" if "file" in result else \
        f"on branch {result['branch']} ({result['commit'][:12]})"
    emit(as_json, result, f"applied {pid} {where}")


@heartbeat.command("reject")
@click.argument("pid", metavar="ID")
@root_option
@json_option
def reject_command(pid: str, root: Path, as_json: bool) -> None:
    """Record that the proposal is not wanted; its subject is not proposed again.

    Example: strato heartbeat reject orphan-0123456789ab
    """
    try:
        result = decisions.reject(_root(root), pid)
    except store.UnknownProposal as exc:
        fail(str(exc), USAGE, prog="strato heartbeat")
    emit(as_json, result, f"rejected {pid}")
