"""``vivary logs`` and ``vivary logs email``: read the run-receipt log back, as the published
suite's front door does, so a person can see (and choose to send) what ran and what failed.

Reading trusts nothing in the log: only the receipt's own keys are kept, and strings that look
like a token or a local path are masked, so a hand-edited or foreign line cannot smuggle
content into a summary or a mail draft. Nothing is ever sent: ``email`` prints a ``mailto:``
link or writes an ``.eml`` draft for the person's own mail program.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import click

from tropo.cli.receipts import ENV
from tropo.console import REFUSED, fail

DEFAULT_LOG = ".vivary/receipts.jsonl"
RECEIPT_KEYS = ("schema", "timestamp", "tool", "version", "command", "flags", "arg_count",
                "exit_code", "ok", "duration_ms", "python", "platform", "receipt_source",
                "error_type")
_MASKS = (  # (pattern, replacement): what must never leave the machine through a summary
    (re.compile(r"re_[A-Za-z0-9_-]+"), "re_[redacted]"),
    (re.compile(r"file:///[^\s,;]+", re.IGNORECASE), "(local path omitted)"),
    (re.compile(r"[A-Za-z]:[\\/][^\s,;]+"), "(local path omitted)"),
    (re.compile(r"\\\\[^\s,;]+"), "(network path omitted)"),
)


@dataclass(frozen=True)
class Log:
    """The receipts a log holds, and how many lines were not receipts."""

    records: list[dict[str, Any]]
    invalid: int


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        for pattern, replacement in _MASKS:
            value = pattern.sub(replacement, value)
        return value
    if isinstance(value, list):
        return [_mask(v) for v in value if isinstance(v, str | int | float | bool)]
    if value is None or isinstance(value, bool | int | float):
        return value
    return type(value).__name__


def parse(text: str) -> Log:
    """Each non-blank line that is a JSON object with receipt keys; the rest are counted."""
    records: list[dict[str, Any]] = []
    invalid = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            raw = None
        kept = {k: _mask(raw[k]) for k in RECEIPT_KEYS if k in raw} if isinstance(raw, dict) else {}
        if kept:
            records.append(kept)
        else:
            invalid += 1
    return Log(records, invalid)


def load(path: str) -> Log:
    target = Path(path).expanduser()
    if not target.is_file():
        raise FileNotFoundError("receipt log not found")
    return parse(target.read_text(encoding="utf-8", errors="replace"))


def select(records: list[dict[str, Any]], *, failed: bool, tail: int | None
           ) -> list[dict[str, Any]]:
    out = [r for r in records if not failed or r.get("ok") is False]
    if tail is None:
        return out
    return out[-tail:] if tail > 0 else []


def summary(records: list[dict[str, Any]], invalid: int) -> dict[str, Any]:
    tools: dict[str, int] = {}
    for record in records:
        name = str(record.get("tool", "unknown"))
        tools[name] = tools.get(name, 0) + 1
    return {"total": len(records), "failed": sum(r.get("ok") is False for r in records),
            "invalid_lines": invalid, "tools": dict(sorted(tools.items()))}


def render(record: dict[str, Any]) -> str:
    """One receipt as a line: time, tool, command, ok/fail, duration, flags."""
    duration = record.get("duration_ms")
    flags = record.get("flags")
    return " ".join([
        str(record.get("timestamp", "unknown-time")), str(record.get("tool", "unknown-tool")),
        str(record.get("command", "unknown-command")),
        "fail" if record.get("ok") is False else "ok",
    ]) + (f" {duration}ms" if isinstance(duration, int) else "") + (
        f" flags={','.join(map(str, flags))}" if isinstance(flags, list) and flags else "")


def _counts(total: dict[str, Any]) -> list[str]:
    lines = [f"total={total['total']} failed={total['failed']} "
             f"invalid_lines={total['invalid_lines']}"]
    if total["tools"]:
        lines.append("tools=" + ", ".join(f"{k}:{v}" for k, v in total["tools"].items()))
    return lines


def summary_text(records: list[dict[str, Any]], invalid: int) -> str:
    lines = ["Vivary receipt log", *_counts(summary(records, invalid)), "",
             *map(render, records)]
    return "\n".join(lines).rstrip() + "\n"


def email_body(records: list[dict[str, Any]], invalid: int) -> str:
    return "\n".join([
        "Vivary support receipt summary", "",
        "This is a local, user-created summary of Vivary run receipts.",
        "It excludes stdout, stderr, file contents, raw query text, target ids, and local paths.",
        "", *_counts(summary(records, invalid)), "", "Recent receipts:",
        *(f"- {render(r)}" for r in records),
    ]) + "\n"


def mailto(to: str, subject: str, body: str) -> str:
    quote = urllib.parse.quote
    return f"mailto:{quote(to, safe='@,')}?subject={quote(subject)}&body={quote(body)}"


def draft_problem(path: Path) -> str | None:
    """Why a draft must not be written at PATH (a symlink anywhere, or not a regular file)."""
    absolute = path.absolute()
    if any(parent.is_symlink() for parent in absolute.parents):
        return "draft path must not contain a symlink or junction directory"
    if absolute.is_symlink():
        return "draft path must not be a symlink"
    if absolute.exists() and not absolute.is_file():
        return "draft path must be a regular file"
    return None


def _load_or_fail(prog: str, path: str) -> Log:
    try:
        return load(path)
    except OSError as exc:
        fail(str(exc), REFUSED, prog=prog)


def _default_log() -> str:
    return os.environ.get(ENV) or DEFAULT_LOG


_path_arg = click.argument("path", required=False)
_json = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
_failed = click.option("--failed", is_flag=True, help="Only failed receipts.")


class _LogsGroup(click.Group):
    """``vivary logs [PATH]`` summarises; ``vivary logs email`` drafts: a first word that is
    not ``email`` is the summary's (a log may be called anything)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] != "email":
            args = ["summary", *args]
        return super().parse_args(ctx, args)


@click.group("logs", cls=_LogsGroup)
def logs() -> None:
    """Summarise the run-receipt log (PATH, else $VIVARY_RECEIPT_LOG, else .vivary/receipts.jsonl)."""


@logs.command("summary", hidden=True)
@_path_arg
@click.option("--tail", type=int, default=None, metavar="N", help="Only the last N receipts.")
@_failed
@_json
def summary_cmd(path: str | None, tail: int | None, failed: bool, as_json: bool) -> None:
    """Summarise receipts: counts per tool, failures, then one line per run.

    \b
    Examples:
      vivary logs --tail 20
      vivary logs --failed --json ~/.vivary/receipts.jsonl
      vivary logs email --to support@example.org --out draft.eml
    """
    log = _load_or_fail("vivary logs", path or _default_log())
    chosen = select(log.records, failed=failed, tail=tail)
    if as_json:
        click.echo(json.dumps({"summary": summary(chosen, log.invalid), "records": chosen},
                              indent=2))
    else:
        click.echo(summary_text(chosen, log.invalid), nl=False)


@logs.command("email")
@_path_arg
@click.option("--to", required=True, help="Recipient of the draft or mailto link.")
@click.option("--subject", default="Vivary support receipt summary", show_default=True)
@click.option("--out", default=None, metavar="FILE",
              help="Write an .eml draft here instead of printing a mailto: link.")
@click.option("--tail", type=int, default=25, show_default=True, metavar="N",
              help="Only the last N receipts.")
@_failed
@_json
def email_cmd(path: str | None, to: str, subject: str, out: str | None, tail: int,
              failed: bool, as_json: bool) -> None:
    """Build a local mail draft of the receipt summary; nothing is sent.

    \b
    Examples:
      vivary logs email --to support@example.org
      vivary logs email --to support@example.org --failed --out draft.eml
    """
    prog = "vivary logs email"
    log = _load_or_fail(prog, path or _default_log())
    if any(c in to + subject for c in "\r\n"):
        fail("email recipient and subject must be single-line text", REFUSED, prog=prog)
    chosen = select(log.records, failed=failed, tail=tail)
    body = email_body(chosen, log.invalid)
    if out is None:
        url = mailto(to, subject, body)
        click.echo(json.dumps({"mailto": url, "records": len(chosen)}, indent=2)
                   if as_json else url)
        return
    target = Path(out).expanduser()
    problem = draft_problem(target)
    if problem is None:
        target.parent.mkdir(parents=True, exist_ok=True)
        problem = draft_problem(target)
    if problem:
        fail(problem, REFUSED, prog=prog)
    message = EmailMessage()
    message["To"], message["Subject"] = to, subject
    message.set_content(body)
    target.write_text(message.as_string(), encoding="utf-8", newline="\n")
    click.echo(json.dumps({"draft": str(target), "records": len(chosen)}, indent=2)
               if as_json else f"{prog}: wrote draft to {target}")
