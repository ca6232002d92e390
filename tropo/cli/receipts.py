"""Run receipts: one privacy-preserving JSONL line per command run, in the published suite's
``vivary.run_receipt.v1`` shape, so ``vivary logs`` (ours or the suite's) reads either tool's.

A receipt records *that* a command ran and how it ended, never *what* it read: the command
name, the names of the options given (only names the CLI itself declares, never a value or a
typed-in word), the argument count, exit code, duration and the Python/OS names. No path, id,
query or output ever reaches the log.

The log is the user's (``--receipt PATH`` or ``VIVARY_RECEIPT_LOG``), shared by concurrent
processes: each receipt is one ``write`` on an ``O_APPEND`` descriptor under an exclusive
``flock``, so lines never interleave, and a torn last line (a crash mid-write) is closed with a
newline first, never overwritten. A receipt that cannot be written (a symlink, a FIFO, a
directory, no permission) is one line on stderr: it never changes the command's result.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import os
import platform
import stat
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from tropo.console import JsonErrorsGroup

SCHEMA = "vivary.run_receipt.v1"
ENV = "VIVARY_RECEIPT_LOG"
OPTION = "--receipt"
HELP = f"Append a local privacy-preserving JSONL run receipt to PATH (or set {ENV})."


class ReceiptRefused(OSError):
    """A receipt path we will not write through; its message is safe to print."""


@dataclass(frozen=True)
class Vocabulary:
    """What a CLI declares: its command names and its option names (and which take a
    value), the only words a receipt may copy from the command line."""

    commands: frozenset[str]
    known: frozenset[str]
    valued: frozenset[str]
    default: str


def receipt_target(argv: Sequence[str], environ: dict[str, str] | None = None
                   ) -> tuple[str | None, str | None]:
    """(path, source) where this run's receipt goes: ``--receipt`` wins over the
    environment; a ``--receipt`` with no value means no receipt (the parser refuses it)."""
    for index, token in enumerate(argv):
        if token == "--":
            break
        if token == OPTION:
            value = argv[index + 1] if index + 1 < len(argv) else ""
            return (value, "flag") if value and not value.startswith("-") else (None, None)
        if token.startswith(OPTION + "="):
            value = token.split("=", 1)[1]
            return (value, "flag") if value else (None, None)
    env = (os.environ if environ is None else environ).get(ENV)
    return (env, "env") if env else (None, None)


def strip_receipt_option(argv: Sequence[str]) -> list[str]:
    """The command line without its ``--receipt PATH``: the option belongs to every
    command at any position, so it is handled here once instead of on each command."""
    out: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            return [*out, *argv[index:]]
        if token == OPTION and index + 1 < len(argv) and not argv[index + 1].startswith("-"):
            index += 2
            continue
        if token.startswith(OPTION + "=") and token != OPTION + "=":
            index += 1
            continue
        out.append(token)
        index += 1
    return out


def _options(argv: Sequence[str], valued: frozenset[str]) -> Iterable[tuple[str, bool]]:
    """(token, is_option) for each token before ``--``, skipping option values."""
    skip = False
    for token in argv:
        if token == "--":
            return
        if skip:
            skip = False
            continue
        if token.startswith("--"):
            name = token.split("=", 1)[0]
            skip = name in valued and "=" not in token
            yield name, True
        else:
            yield token, False


def command_name(argv: Sequence[str], vocab: Vocabulary) -> str:
    """The command a run asked for: ``version``/``help`` win, then the first word that
    names a command, else the CLI's default."""
    if "--version" in argv:
        return "version"
    if any(token in ("-h", "--help") for token in argv):
        return "help"
    for token, is_option in _options(argv, vocab.valued):
        if not is_option and token in vocab.commands:
            return token
    return vocab.default


def flag_names(argv: Sequence[str], vocab: Vocabulary) -> list[str]:
    """The declared option names a run used, sorted; never a value, never an unknown word."""
    found = {token for token, is_option in _options(argv, vocab.valued)
             if token in vocab.known and token != OPTION}
    return sorted(found)


def build(*, tool: str, version: str, argv: Sequence[str], vocab: Vocabulary, exit_code: int,
          duration_ms: int, source: str, error_type: str | None = None,
          now: datetime.datetime | None = None,
          routed: Sequence[str] | None = None) -> dict[str, Any]:
    """The receipt document (pure: the caller supplies the clock and the outcome)."""
    stamp = (now or datetime.datetime.now(datetime.UTC)).isoformat()
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "timestamp": stamp.replace("+00:00", "Z"),
        "tool": tool,
        "version": version,
        "command": command_name(argv if routed is None else routed, vocab),
        "flags": flag_names(argv, vocab),
        "arg_count": len(argv),
        "exit_code": exit_code,
        "ok": exit_code == 0,
        "duration_ms": duration_ms,
        "python": platform.python_version(),
        "platform": platform.system(),
        "receipt_source": source,
    }
    if error_type:
        record["error_type"] = error_type
    return record


def encode(record: dict[str, Any]) -> bytes:
    """One line, keys sorted, compact: the suite's byte layout."""
    return (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()


def _has_symlink_ancestor(target: Path) -> bool:
    return any(parent.is_symlink() for parent in target.parents)


def _open_for_append(target: Path) -> int:
    """A descriptor on a regular file that is not a symlink, opened without following one
    and without blocking (a FIFO put there after our look must not hang the command)."""
    flags = os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(target, os.O_RDWR | flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ReceiptRefused("receipt path must not be a symlink") from exc
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise ReceiptRefused("receipt path must be a regular file") from exc
        if exc.errno != errno.EACCES:
            raise
        fd = os.open(target, os.O_WRONLY | flags, 0o600)  # write-only log: no repair read
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ReceiptRefused("receipt path must be a regular file")
    return fd


def append(path: str, line: bytes) -> None:
    """Append one receipt line atomically; earlier lines are never rewritten."""
    target = Path(path).expanduser().absolute()
    if _has_symlink_ancestor(target):
        raise ReceiptRefused("receipt path must not contain a symlink or junction directory")
    if target.is_symlink():
        raise ReceiptRefused("receipt path must not be a symlink")
    if target.exists() and not target.is_file():
        raise ReceiptRefused("receipt path must be a regular file")
    target.parent.mkdir(parents=True, exist_ok=True)
    if _has_symlink_ancestor(target):  # raced in while we made the folders
        raise ReceiptRefused("receipt path must not contain a symlink or junction directory")
    fd = _open_for_append(target)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the torn-line look and the write are one step
        size = os.fstat(fd).st_size
        if size:
            try:
                torn = os.pread(fd, 1, size - 1) != b"\n"
            except OSError:  # opened write-only
                torn = False
            if torn:
                line = b"\n" + line
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)  # releases the lock


def _safe_message(exc: OSError) -> str:
    if isinstance(exc, ReceiptRefused):
        return str(exc)
    return "could not write receipt; check that the receipt path is a writable regular file"


def vocabulary(group: click.Group, default: str) -> Vocabulary:
    """The words a receipt may copy, read from the CLI's own declarations (nothing typed
    by the user can widen it)."""
    ctx = click.Context(group, info_name=group.name, **group.context_settings)
    known: set[str] = set()
    valued: set[str] = {OPTION}
    commands: set[str] = set()

    def walk(command: click.Command) -> None:
        for param in command.get_params(ctx):
            if isinstance(param, click.Option):
                names = [*param.opts, *param.secondary_opts]
                known.update(names)
                if not param.is_flag and not param.count:
                    valued.update(param.opts)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    commands.add(name)
                    walk(sub)

    walk(group)
    return Vocabulary(frozenset(commands), frozenset(known), frozenset(valued), default)


def _tool_version() -> str:
    import importlib.metadata  # 25 ms of imports: only when a receipt is written

    try:
        return importlib.metadata.version("vivary-git")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def record_run(group: click.Group, *, tool: str, default: str, argv: Sequence[str],
               started: float, exit_code: int, error_type: str | None,
               routed: Sequence[str] | None = None) -> None:
    """Write this run's receipt if one was asked for; a failure is one stderr line.
    ``routed`` is the command line as parsed, when the group rewrote it: it names the
    command; the flags and the count stay those the user typed."""
    path, source = receipt_target(argv)
    if not path or not source:
        return
    try:
        line = encode(build(tool=tool, version=_tool_version(), argv=argv,
                            vocab=vocabulary(group, default), exit_code=exit_code,
                            duration_ms=int((time.monotonic() - started) * 1000),
                            source=source, error_type=error_type, routed=routed))
        append(path, line)
    except OSError as exc:
        print(f"{tool}: receipt: {_safe_message(exc)}", file=sys.stderr)


def names_request(target: str, request: str | None) -> bool:
    """Whether a receipt appended at ``target`` could land in the request document the
    command reads: the same file, or any target when the request is stdin (a pipe has no
    identity to compare, so this fails closed)."""
    if request is None:
        return False
    if request == "-":
        return True
    try:
        return os.path.samefile(os.path.expanduser(request), os.path.expanduser(target))
    except (OSError, ValueError):
        return False


class ReceiptGroup(JsonErrorsGroup):
    """A command group whose every run can leave a receipt: the one shared place where a
    CLI takes ``--receipt PATH`` (at any position) and ``VIVARY_RECEIPT_LOG``; its usage
    errors under ``--json`` are JSON like every other error. ``receipt_request`` names the
    request document a command line reads, which a receipt must never be appended to."""

    def __init__(self, *args: Any, receipt_tool: str, receipt_default: str,
                 receipt_request: Callable[[Sequence[str]], str | None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.receipt_tool = receipt_tool
        self.receipt_default = receipt_default
        self.receipt_request = receipt_request
        self.params.append(click.Option([OPTION], metavar="PATH", expose_value=False,
                                        help=HELP))

    def route(self, argv: list[str]) -> list[str]:
        """The command line to parse, from the one given (without ``--receipt``): a
        group with a default command inserts it here."""
        return argv

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        started = time.monotonic()
        target, _ = receipt_target(argv)
        reads = self.receipt_request
        request = reads(strip_receipt_option(argv)) if target and reads else None
        if target and names_request(target, request):
            if not {"-h", "--help"} & set(argv):
                print(f"{prog_name or self.receipt_tool}: receipt: receipt path must not identify "
                      "the request document", file=sys.stderr)
                sys.exit(2)
            # help never reads the request: run it without a receipt rather than refuse
            return super().main(self.route(strip_receipt_option(argv)), prog_name,
                                complete_var, standalone_mode, **extra)
        code, error_type = 0, None
        routed = self.route(strip_receipt_option(argv))
        try:
            result = super().main(routed, prog_name, complete_var, standalone_mode, **extra)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            error_type = "SystemExit" if code == 2 else None  # usage/config, as the suite
            raise
        except Exception as exc:
            code, error_type = 1, type(exc).__name__
            raise
        finally:
            record_run(self, tool=self.receipt_tool, default=self.receipt_default, argv=argv,
                       started=started, exit_code=code, error_type=error_type, routed=routed)
        return result
