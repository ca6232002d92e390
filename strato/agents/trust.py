"""Who chose the program that runs: approvals of exact contents, kept in the user's own
config directory and never in the repository, so that a checked-out branch, the notes
ref or an MCP client can never pick a program on the user's behalf (docs/security.md).

An approval is (repository, kind, name) -> sha256 of the exact bytes approved:

- ``file``: a versioned file such as ``.vivary/agents.toml`` (``vivary trust FILE``);
- ``spec``: a flow spec the person named at their own prompt (``strato run FILE``), or
  one an MCP server started with ``--allow-commands`` accepted; its ``evaluate:``
  commands run only while its digest is approved;
- ``guard-policy``: a guard policy (by its checksum) whose command predicates may run.

The repository is its work tree's real path, as direnv keys an ``allow``: a moved
repository is a new one, asked again. The approved bytes of files are kept beside the
approvals (content-addressed) so that ``vivary trust --show`` can print what changed.
Writes are whole-or-nothing under a lock; a damaged store approves nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tropo.fs.atomic import write_atomic

KINDS = ("file", "spec", "guard-policy")
STORE_VERSION = 1


class TrustError(Exception):
    """The trust store cannot be read or written (a configuration error: exit 2)."""


class Untrusted(Exception):
    """A program would start on bytes the user has not approved (a refusal: exit 1)."""

    def __init__(self, message: str, *, name: str, kind: str = "file") -> None:
        super().__init__(message)
        self.name = name
        self.kind = kind


@dataclass(frozen=True)
class Approval:
    repository: str
    kind: str
    name: str
    sha256: str
    approved_at: str

    def to_json(self) -> dict[str, str]:
        return {"repository": self.repository, "kind": self.kind, "name": self.name,
                "sha256": self.sha256, "approvedAt": self.approved_at}


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/vivary`` (else ``~/.config/vivary``): the user's own,
    unversioned configuration, the one place besides approvals a program may come from."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "vivary"


def _store() -> Path:
    return config_dir() / "trust.json"


def _objects() -> Path:
    return config_dir() / "trusted"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def repository_key(root: Path) -> str:
    """The repository an approval belongs to: its work tree's real path."""
    return str(root.resolve())


def _read() -> dict[str, Any]:
    path = _store()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {"version": STORE_VERSION, "approvals": []}
    except OSError as exc:
        raise TrustError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TrustError(f"{path} is not valid JSON: move it aside and approve again") from None
    if not isinstance(data, dict) or data.get("version") != STORE_VERSION \
            or not isinstance(data.get("approvals"), list):
        raise TrustError(f"{path} is not a version-{STORE_VERSION} trust store")
    return data


def _parse(row: Any) -> Approval | None:
    keys = ("repository", "kind", "name", "sha256", "approvedAt")
    if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in keys):
        return None
    if row["kind"] not in KINDS:
        return None
    return Approval(row["repository"], row["kind"], row["name"], row["sha256"], row["approvedAt"])


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    folder = config_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / ".trust.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise TrustError(f"cannot write {folder}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def approvals(root: Path | None = None) -> list[Approval]:
    """Every approval, or only those of the repository at ``root``."""
    rows = [a for a in map(_parse, _read()["approvals"]) if a is not None]
    if root is None:
        return rows
    key = repository_key(root)
    return [a for a in rows if a.repository == key]


def approved(root: Path, kind: str, name: str) -> Approval | None:
    """The approval of ``name`` (a path, for files) in this repository, if any."""
    for row in approvals(root):
        if row.kind == kind and row.name == name:
            return row
    return None


def is_approved(root: Path, kind: str, name: str, data: bytes) -> bool:
    """Whether exactly these bytes are what the user approved for ``name``."""
    row = approved(root, kind, name)
    return row is not None and row.sha256 == digest(data)


def is_approved_digest(root: Path, kind: str, sha256: str) -> bool:
    """Whether some approval of this kind in this repository is of exactly ``sha256``
    (specs and guard policies are approved by content, whatever their name)."""
    return any(row.kind == kind and row.sha256 == sha256 for row in approvals(root))


def approved_bytes(row: Approval) -> bytes | None:
    """The bytes that were approved, when they were kept (files are)."""
    try:
        return (_objects() / row.sha256).read_bytes()
    except OSError:
        return None


def approve(root: Path, kind: str, name: str, data: bytes) -> Approval:
    """Record that the user approves exactly ``data`` as ``name`` in this repository,
    replacing an older approval of the same name."""
    if kind not in KINDS:
        raise ValueError(kind)
    row = Approval(repository_key(root), kind, name, digest(data),
                   time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    with _locked():
        data_doc = _read()
        keep = [r for r in data_doc["approvals"]
                if (p := _parse(r)) is None
                or (p.repository, p.kind, p.name) != (row.repository, kind, name)]
        keep.append(row.to_json())
        try:
            write_atomic(_objects() / row.sha256, data, mode=0o600)
            write_atomic(_store(), _dump(keep), mode=0o600)
        except OSError as exc:
            raise TrustError(f"cannot write {config_dir()}: {exc.strerror}") from None
    return row


def revoke(root: Path, kind: str, name: str) -> bool:
    """Take an approval back; False when there was none."""
    key = repository_key(root)
    with _locked():
        data_doc = _read()
        keep = [r for r in data_doc["approvals"]
                if (p := _parse(r)) is None or (p.repository, p.kind, p.name) != (key, kind, name)]
        if len(keep) == len(data_doc["approvals"]):
            return False
        try:
            write_atomic(_store(), _dump(keep), mode=0o600)
        except OSError as exc:
            raise TrustError(f"cannot write {config_dir()}: {exc.strerror}") from None
    return True


def _dump(rows: list[Any]) -> bytes:
    return (json.dumps({"version": STORE_VERSION, "approvals": rows}, indent=1, sort_keys=True)
            + "\n").encode()


def refusal(rel: str, runs: str, *, changed: bool, moved_from: str | None = None) -> str:
    """The one line a refusal says: the file, what it would run, how to review and approve
    (and, for a repository that moved, where it was approved)."""
    state = "changed since you approved it" if changed else "not approved for this repository"
    if moved_from is not None:
        state += f" (it was approved at {moved_from}, which is gone: a moved repository is asked again)"
    return (f"{rel} is {state}; it would run {runs}. Review it with `vivary trust --show {rel}`, "
            f"then approve it with `vivary trust {rel}`")


def require_file(root: Path, rel: str, data: bytes, runs: str) -> None:
    """Refuse (``Untrusted``) unless exactly ``data`` is approved as ``rel`` here."""
    row = approved(root, "file", rel)
    if row is not None and row.sha256 == digest(data):
        return
    moved = None if row is not None else next(
        (a.repository for a in approvals() if (a.kind, a.name, a.sha256) == ("file", rel, digest(data))
         and not Path(a.repository).exists()), None)
    raise Untrusted(refusal(rel, runs, changed=row is not None, moved_from=moved), name=rel)
