"""The one way this toolkit starts a program (git aside: `tropo.git.gitcli`), in three
shapes. :func:`run_process`: a program we wait for, in a process group of its own,
bounded in time and in the output kept, the whole group killed when it ends (children
it left behind would otherwise hold its pipes open forever). :func:`spawn`: a program
that outlives us (a background runner), in a session of its own, never waited for.
:func:`run_attached`: a program run at the person's own terminal (a hook they had
before ours, `ssh-keygen` asking for a passphrase). What may be started is decided
before any of these is called (docs/security.md)."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from strato.agents.interpreter import own_python

# the start error of a program that is not there (ENOENT for argv[0]): nothing a retry
# could change, so a caller gives up at once (the agents: `agent_not_found`)
PROGRAM_NOT_FOUND = "program not found"
MAX_KEPT = 1 << 20  # keep the last MiB of stdout: an agent's result is at the end
STDERR_KEPT = 4096
# the orphan's parent exits at once, so the program is reparented and nobody must reap
# it (argv[1]: a descriptor to hand on, -1 for none)
_ORPHAN = (
    "import subprocess, sys; fd = int(sys.argv[1]); "
    "subprocess.Popen(sys.argv[2:], close_fds=True, pass_fds=() if fd < 0 else (fd,))"
)


class Sink(Protocol):
    """Where a copy of a stream goes as it is read (a bounded file on disk)."""

    def write(self, chunk: bytes) -> object: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Finished:
    """A program that ran to the end or was killed at its timeout."""

    returncode: int | None  # None: timed out and killed
    stdout: str  # the last MiB
    stderr_tail: str
    duration_ms: int


def run_process(
    argv: list[str], cwd: Path, timeout_s: float, stdin: bytes | None = None, *,
    env: Mapping[str, str] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_exit: Callable[[], None] | None = None,
    stop: Callable[[int], object] | None = None,
    copies: Callable[[], tuple[Sink | None, Sink | None]] | None = None,
) -> Finished | str:
    """Run argv in its own process group, bounded in time and in output kept; a string
    when it cannot be started (`PROGRAM_NOT_FOUND: argv[0]` when there is no such
    program). `on_start` is told the group's id as soon as it exists (a background run
    records it to stop it). When the program ends or times out its group is stopped, by
    `stop` (default: SIGKILL at once); `on_exit` is called then, before the pipes are
    drained (a background dispatch stops there what left the group and may hold them
    open). `copies` get every chunk of stdout and stderr as it comes (and are closed at
    its end): the whole stream, where the result keeps only a tail; they are made once
    the program has started."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        if exc.filename == argv[0]:  # else the missing file is the folder to run in
            return f"{PROGRAM_NOT_FOUND}: {argv[0]}"
        return str(exc.strerror or exc)
    except OSError as exc:
        return str(exc.strerror or exc)
    if on_start is not None:
        on_start(proc.pid)
    to_out, to_err = (None, None) if copies is None else copies()
    out, err = _Tail(MAX_KEPT, to_out), _Tail(STDERR_KEPT, to_err)
    readers = [
        threading.Thread(target=t.drain, args=(s,), daemon=True)
        for t, s in ((out, proc.stdout), (err, proc.stderr))
    ]
    if stdin is not None:  # written from a thread: a child that never reads cannot block us
        readers.append(threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True))
    for r in readers:
        r.start()
    code = _wait(proc, timeout_s)
    (stop or _kill_group)(proc.pid)
    proc.wait()
    if on_exit is not None:
        on_exit()
    for r in readers:
        r.join()
    ms = int((time.monotonic() - started) * 1000)
    return Finished(code, out.text(), err.text().strip(), ms)


def _wait(proc: subprocess.Popen[bytes], timeout_s: float) -> int | None:
    """The program's exit code, None when ``timeout_s`` passed first. Woken by the
    kernel the moment it exits (a pidfd), where ``Popen.wait(timeout)`` polls with sleeps
    of up to 50 ms: a 50 ms agent was seen ending ~25 ms late on average."""
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:  # a kernel without pidfds: Popen's polling
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)
    return proc.wait() if ready else None


def last_line(text: str) -> str:
    """The last line of a program's output, short enough for a one-line failure."""
    return (text.strip().splitlines()[-1:] or [""])[0][:200]


def spawn(
    argv: list[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
    log: IO[bytes] | None = None, pass_fds: tuple[int, ...] = (),
) -> int:
    """Start a program that outlives us, never waited for: a session of its own (no
    terminal, and a signal to our group misses it), stdin empty, stdout and stderr
    appended to `log` (else dropped), no descriptor of ours but `pass_fds`. Its pid."""
    return _detached(argv, cwd, env, log, pass_fds).pid


def detach() -> None:
    """Make this process a session of its own, as :func:`spawn` makes its child: no
    terminal, and a signal to the group that started it misses it. For a process a shell
    put in the background (the post-commit hook's second half)."""
    with contextlib.suppress(OSError):  # a group leader cannot: it was started on its own
        os.setsid()


def spawn_orphan(
    argv: list[str], *, cwd: Path | None = None, log: IO[bytes] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> None:
    """:func:`spawn` through a parent of its own that exits at once: the program is
    reparented, so no process of ours must ever reap it (a long-lived caller, such as
    an MCP server, would otherwise keep a zombie per start)."""
    fd = str(pass_fds[0]) if pass_fds else "-1"
    _detached(own_python("-c", _ORPHAN, fd, *argv), cwd, None, log, pass_fds[:1]).wait()


def _detached(
    argv: list[str], cwd: Path | None, env: Mapping[str, str] | None, log: IO[bytes] | None,
    pass_fds: tuple[int, ...],
) -> subprocess.Popen[bytes]:
    out: IO[bytes] | int = subprocess.DEVNULL if log is None else log
    return subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
        start_new_session=True, close_fds=True, pass_fds=pass_fds,
    )


def run_attached(argv: list[str], *, stdin: bytes | None = None, quiet: bool = False) -> tuple[int, str]:
    """Run a program in our session, at the person's terminal, and wait for it without
    a bound (they watch it, and may answer it): its exit code, and its stderr when
    `quiet` (then stdout is dropped; its prompts still reach the terminal). `stdin`:
    bytes to feed it, else it reads ours."""
    proc = subprocess.run(
        argv, input=stdin, check=False,
        stdout=subprocess.DEVNULL if quiet else None,
        stderr=subprocess.PIPE if quiet else None,
    )
    return proc.returncode, (proc.stderr or b"").decode("utf-8", errors="replace")


def _feed(stream: Any, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, OSError):
        stream.write(data)
        stream.close()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


class _Tail:
    """Keeps only the last `limit` bytes of a stream, so megabytes cannot pile up; a
    copy, if any, sees every byte."""

    def __init__(self, limit: int, copy: Sink | None = None) -> None:
        self.limit = limit
        self.copy = copy
        self.buf = bytearray()

    def drain(self, stream: Any) -> None:
        while chunk := stream.read1(65536):
            if self.copy is not None:
                self.copy.write(chunk)
            self.buf += chunk
            if len(self.buf) > 2 * self.limit:
                del self.buf[: len(self.buf) - self.limit]
        if self.copy is not None:
            self.copy.close()
        stream.close()

    def text(self) -> str:
        return bytes(self.buf[-self.limit :]).decode("utf-8", errors="replace")
