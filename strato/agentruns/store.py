"""The files of one agent run, and the only code that writes them. Every file is
written whole and renamed into place; the result is created at most once (a hard link
fails when it exists), so a runner and a canceller racing to finish a run agree. A
stream is opened and read without following a symlink: another agent in the repository
may plant one there to a file outside it."""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strato.agents.locks import open_append
from tropo.fs.atomic import write_atomic
from tropo.fs.private import PlantedLink, private_folder

STREAM_LIMIT = 4 << 20  # bytes per stream file; with one rotated file, 8 MiB on disk at most
_ID = re.compile(r"ar-[0-9a-f]{12}")
# a client's `cancellationId` (Stratum: a fresh UUID) names the foreground run it starts
_CLIENT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def new_id() -> str:
    return f"ar-{secrets.token_hex(6)}"


def valid_id(run_id: str) -> bool:
    """Ids are ours or a client's UUID: anything else (a path, `..`) names no run."""
    return _ID.fullmatch(run_id) is not None or _CLIENT_ID.fullmatch(run_id) is not None


def _write(path: Path, doc: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(doc, sort_keys=True).encode(), fsync=False)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


@dataclass(frozen=True)
class RunDir:
    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def stream(self) -> Path:
        return self.path / "stream.log"

    @property
    def stderr(self) -> Path:
        return self.path / "stderr.log"

    def request(self) -> dict[str, Any]:
        return _read(self.path / "request.json") or {}

    def proc(self) -> dict[str, Any] | None:
        return _read(self.path / "proc.json")

    def set_proc(self, pgid: int) -> None:
        _write(self.path / "proc.json", {"pgid": pgid})

    def runner(self) -> int | None:
        doc = _read(self.path / "runner.json")
        return None if doc is None else int(doc["pid"])

    def set_runner(self, pid: int) -> None:
        _write(self.path / "runner.json", {"pid": pid})

    def progress(self) -> int:
        return int((_read(self.path / "progress.json") or {}).get("eventsSeen", 0))

    def set_progress(self, events: int) -> None:
        _write(self.path / "progress.json", {"eventsSeen": events})

    def result(self) -> dict[str, Any] | None:
        return _read(self.path / "result.json")

    def finish(self, doc: dict[str, Any]) -> bool:
        """Record the outcome unless one is recorded already; True when this one won."""
        fd, name = tempfile.mkstemp(dir=self.path, prefix=".result.")
        tmp = Path(name)
        with os.fdopen(fd, "wb") as fh:
            fh.write(json.dumps(doc, sort_keys=True).encode())
        try:
            os.link(tmp, self.path / "result.json")
        except FileExistsError:
            return False
        finally:
            tmp.unlink()
        return True

    def cancel_requested(self) -> dict[str, Any] | None:
        return _read(self.path / "cancel.json")

    def request_cancel(self, by: str) -> None:
        _write(self.path / "cancel.json", {"by": by})

    def tail(self, which: Path, limit: int) -> str:
        """The last `limit` bytes of a stream, across its rotation."""
        data = b""
        for part in (which, which.with_name(which.name + ".1")):
            if len(data) < limit:
                data = _last_bytes(part, limit - len(data)) + data
        return data.decode("utf-8", errors="replace")


def _last_bytes(path: Path, n: int) -> bytes:
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - n))
            return fh.read(n)
    except OSError:
        return b""


class Store:
    """All agent runs of one repository: ``<git dir>/vivary/agent-runs/<id>/``."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir

    def create(self, request: dict[str, Any], run_id: str | None = None) -> RunDir:
        """A new run's folder, under ``run_id`` when the client chose one (a
        `cancellationId`; `FileExistsError` if a run has it); `PlantedLink` if a folder
        on the way is a symlink."""
        assert run_id is None or valid_id(run_id)
        run = RunDir(private_folder(self.git_dir, "agent-runs", create=True) / (run_id or new_id()))
        run.path.mkdir()
        _write(run.path / "request.json", request)
        return run

    def all(self) -> list[RunDir]:
        """Every run of the repository (none when there is no folder yet)."""
        try:
            folder = private_folder(self.git_dir, "agent-runs")
            names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        except (PlantedLink, OSError):
            return []
        return [run for name in names if (run := self.get(name)) is not None]

    def get(self, run_id: str) -> RunDir | None:
        """The run of that id; None for an id not ours or a folder planted as a link."""
        if not valid_id(run_id):
            return None
        try:
            run = RunDir(private_folder(self.git_dir, "agent-runs", run_id))
        except PlantedLink:
            return None
        return run if (run.path / "request.json").is_file() else None


class BoundedStream:
    """An append-only file kept under `limit` bytes by rotating to `<name>.1`, so an agent
    that prints without end fills at most twice the limit."""

    def __init__(self, path: Path, limit: int = STREAM_LIMIT) -> None:
        self.path, self.limit = path, limit
        self.fh = open_append(path)
        self.size = 0

    def write(self, chunk: bytes) -> None:
        if self.size + len(chunk) > self.limit and self.size:
            self.fh.close()
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self.fh, self.size = open_append(self.path), 0
        chunk = chunk[-self.limit :]
        self.fh.write(chunk)
        self.fh.flush()
        self.size += len(chunk)

    def close(self) -> None:
        self.fh.close()
