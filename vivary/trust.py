"""`vivary trust`: the person reviews and approves the exact bytes of a repository file
that may start programs (as direnv `allow` and mise `trust` do), and takes approvals back.

The approvals live in :mod:`strato.agents.trust`, in the user's config directory: nothing here
writes inside the repository. A file is named as a shell user names it (relative to the
current folder), must lie in the work tree, and is read once, through no symbolic link (a
link in the repository can point anywhere outside it) and up to :data:`MAX_BYTES`, so the
bytes approved are the bytes shown. Every refusal is raised before anything is written."""

from __future__ import annotations

import difflib
import errno
import os
import shlex
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from strato.agents import config as agents
from strato.agents import trust
from tropo import untrusted

# the repository's files whose bytes choose programs, approved by a bare `vivary trust`
EXECUTABLE = (agents.WORKSPACE_FILE,)
MAX_BYTES = 1 << 20  # far above any config file; a bigger one is not a file to review


class Refused(Exception):
    """What `vivary trust` declines, said in one line; nothing was written. ``exit_code``
    is 1 for a refusal, 2 for a usage or configuration error."""

    def __init__(self, message: str, code: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.code = code
        self.exit_code = exit_code


@dataclass(frozen=True)
class Reviewed:
    """A file as `--show` reviews it: what it would run, and how it differs from the bytes
    last approved (``approved`` None when it never was)."""

    name: str
    data: bytes
    approved: trust.Approval | None

    @property
    def state(self) -> str:
        if self.approved is None:
            return "not approved"
        return "approved" if self.approved.sha256 == trust.digest(self.data) else "changed"

    def runs(self) -> list[tuple[str, tuple[str, ...]]] | None:
        """Each program the file defines with its argv, or None for a file that is not an
        agents config (its whole content is then what is reviewed)."""
        if self.name not in EXECUTABLE:
            return None
        try:
            found = agents.programs_in(Path(self.name), self.data)
        except agents.AgentConfigError as exc:
            raise Refused(str(exc), "config", 2) from None
        return [("judge" if name == agents.JUDGE else f"agents.{name}", spec.argv)
                for name, spec in sorted(found.items())]

    def diff(self) -> str:
        """A unified diff from the bytes last approved to these ("" when the same)."""
        before = trust.approved_bytes(self.approved) if self.approved is not None else None
        if before is None:
            return ""
        return "".join(difflib.unified_diff(
            _decoded(before).splitlines(keepends=True), _decoded(self.data).splitlines(keepends=True),
            f"{self.name} (approved)", f"{self.name} (now)"))

    def to_json(self) -> dict[str, Any]:
        runs = self.runs()
        return {
            "path": self.name, "sha256": trust.digest(self.data), "state": self.state,
            "approved": self.approved.to_json() if self.approved is not None else None,
            "runs": None if runs is None else [{"name": n, "argv": list(a)} for n, a in runs],
            "content": _decoded(self.data) if runs is None else None,
            "diff": self.diff() if self.state == "changed" else None,
        }

    def lines(self) -> list[str]:
        """What `--show` prints: what the file would run (or its content), the diff since
        the last approval, and the sha256 of exactly these bytes, which `--sha256` takes."""
        out = self.what(f"{untrusted.visible(self.name)}: {self.state}")
        if self.state == "changed":
            diff = self.diff()
            out += [untrusted.block(line) for line in diff.splitlines()] if diff else \
                ["  (the approved bytes were not kept: approve again after reviewing)"]
        digest = trust.digest(self.data)
        out.append(f"sha256 {digest} (of exactly the bytes shown)")
        if self.state != "approved":
            command = f"vivary trust --sha256 {digest} {shlex.quote(self.name)}"
            said = "not approved yet" if self.state == "not approved" else "changed since approved"
            out.append(f"{said}: `{untrusted.visible(command)}` approves exactly these bytes")
        return out

    def what(self, head: str, runs_verb: str = "would run") -> list[str]:
        """``head`` then what the file would run (each program's argv) or, for a file that
        is not an agents config, its content: the one rendering `--show` and an approval
        print, every character someone else chose shown by :mod:`tropo.untrusted`."""
        runs = self.runs()
        if runs is None:
            return [f"{head}; its content:"] + ["  " + untrusted.block(line)
                                               for line in _decoded(self.data).splitlines()]
        return [f"{head}; it {runs_verb}:"] + (
            [f"  {name}: {untrusted.visible(shlex.join(argv))}" for name, argv in runs] or ["  no program"])


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def name_of(top: Path, cwd: Path, arg: str) -> str:
    """The repository-relative name of FILE ``arg`` (relative to ``cwd``, as the shell
    user typed it), refused when it is not inside the work tree at ``top``."""
    where = Path(os.path.normpath(cwd / arg))
    try:
        rel = where.relative_to(top)
    except ValueError:
        raise Refused(f"{arg}: outside the work tree {top}", "outside") from None
    if not rel.parts or rel.parts[0] == ".git":
        raise Refused(f"{arg}: not a file of the work tree {top}", "outside")
    return PurePosixPath(*rel.parts).as_posix()


def read(top: Path, name: str) -> bytes:
    """The bytes of ``name``, opened one folder at a time without following any link, so
    they are the bytes of the regular file in the repository and nothing it points to."""
    parts = PurePosixPath(name).parts
    try:
        with _folder(top, parts[:-1], name) as folder:
            fd = _open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, folder, name)
    except FileNotFoundError:
        raise Refused(f"{name}: no such file in the repository", "missing") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refused(f"{name}: not a regular file", "not_a_file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise Refused(f"{name}: {exc.strerror}", "unreadable") from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise Refused(f"{name}: larger than {MAX_BYTES} bytes; not a file to review", "too_large")
    return data


@contextmanager
def _folder(top: Path, parts: tuple[str, ...], name: str) -> Iterator[int]:
    """An open descriptor of the folder ``parts`` below ``top``, each step a real folder."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            step = _open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, fd, name)
            os.close(fd)
            fd = step
        yield fd
    finally:
        os.close(fd)


def _open(part: str, flags: int, folder: int, name: str) -> int:
    try:
        return os.open(part, flags, dir_fd=folder)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, folder):
            raise Refused(f"{name}: {part} is a symbolic link in the repository (it can point "
                          "outside it); vivary trust approves only regular files", "symlink") from None
        raise Refused(f"{name}: {exc.strerror}", "unreadable") from None


def _is_link(part: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(part, dir_fd=folder).st_mode)
    except OSError:
        return False


def names(top: Path, cwd: Path, args: tuple[str, ...]) -> list[str]:
    """The files named, or by default the repository's executable config files that
    exist (a link among them is kept, to be refused by name)."""
    if args:
        return list(dict.fromkeys(name_of(top, cwd, a) for a in args))
    found = [n for n in EXECUTABLE if os.path.lexists(top / n)]
    if not found:
        raise Refused(f"no {', '.join(EXECUTABLE)} in {top} (nothing to approve); name a FILE",
                      "nothing_to_approve")
    return found


def review(top: Path, cwd: Path, args: tuple[str, ...]) -> list[Reviewed]:
    """Each file read once, with its approval here if any (`--show`)."""
    return [Reviewed(n, read(top, n), trust.approved(top, "file", n)) for n in names(top, cwd, args)]


def approve(top: Path, cwd: Path, args: tuple[str, ...], sha256: str | None = None) -> list[Reviewed]:
    """Approve each file's exact bytes for this repository; every file is read and
    checked before the first approval is written. With ``sha256`` (what `--show` printed)
    the one file is approved only when the bytes read now are exactly those: a file
    swapped between the review and the approval is refused, and nothing is approved."""
    files = [Reviewed(n, read(top, n), None) for n in names(top, cwd, args)]
    if sha256 is not None:
        if len(files) != 1:
            raise Refused("--sha256 approves one FILE: name the file whose digest --show printed",
                          "usage", 2)
        [file] = files
        now = trust.digest(file.data)
        if now != sha256:
            raise Refused(f"{file.name} changed since it was shown (sha256 now {now[:12]}, "
                          f"shown {sha256[:12]}); nothing approved: review it again with "
                          f"`vivary trust --show {shlex.quote(file.name)}`", "changed")
    for file in files:
        file.runs()  # an agents config that does not parse is not approved
    return [Reviewed(f.name, f.data, trust.approve(top, "file", f.name, f.data)) for f in files]


def revoke(top: Path, cwd: Path, args: tuple[str, ...]) -> list[str]:
    """Take back the approvals of the files named (which need not exist any more); none
    is taken back unless every one was approved here."""
    wanted = [name_of(top, cwd, a) for a in args]
    if missing := [n for n in wanted if trust.approved(top, "file", n) is None]:
        raise Refused(f"{missing[0]}: not approved for this repository (nothing revoked)",
                      "not_approved")
    return [n for n in dict.fromkeys(wanted) if trust.revoke(top, "file", n)]


def listing(top: Path | None) -> list[dict[str, Any]]:
    """The approvals of the repository at ``top`` (every repository's when None); a file
    of this repository also says whether its bytes are still the approved ones."""
    rows = []
    for row in trust.approvals(top):
        doc: dict[str, Any] = row.to_json()
        if top is not None and row.kind == "file":
            try:
                doc["state"] = "approved" if trust.digest(read(top, row.name)) == row.sha256 else "changed"
            except Refused as exc:
                doc["state"] = exc.code
        rows.append(doc)
    return rows


def listed(row: dict[str, Any], every: bool) -> str:
    """One approval of :func:`listing` as a line (with its repository under ``--all``)."""
    where = f"{untrusted.visible(row['repository'])}: " if every else ""
    state = f" ({row['state']})" if "state" in row else ""
    return (f"{where}{row['kind']} {untrusted.visible(row['name'])} sha256 {row['sha256'][:12]} "
            f"approved {row['approvedAt']}{state}")
