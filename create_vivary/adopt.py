"""``create-vivary adopt``: bring an existing folder or repository into Vivary.

It only adds files. What was there before stays byte-for-byte, and the schema it
writes excludes that content from the graph, so the first check is clean and a person
opts folders in later. A schema that is already there is kept, and with it whatever it
finds; then adopt offers the ratchet (``--ratchet``: hooks refuse only new findings).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from create_vivary import adapters as adapters_mod
from create_vivary import journal, presets
from create_vivary.plan import FileAction, Refused, actions_hash, file_actions, write
from create_vivary.scaffold import (
    ALWAYS_EXCLUDED,
    GRAPH_DIRS,
    PRIVATE_DIR,
    PRIVATE_FILES,
    RATCHET,
    SCHEMA,
    is_shell,
    render,
)
from tropo.git import gitcli

CODE_SUFFIXES = frozenset(
    {".py", ".js", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".kt", ".scala", ".c", ".h"}
    | {".cc", ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".m", ".sh", ".sql", ".lua"}
)
MD_SUFFIXES = frozenset({".md", ".markdown"})
# A build file says "code" louder than any count of files: a package is a code repository.
MANIFESTS = frozenset(
    {"pyproject.toml", "setup.py", "setup.cfg", "package.json", "go.mod", "Cargo.toml", "pom.xml"}
    | {"build.gradle", "build.gradle.kts", "Gemfile", "composer.json", "CMakeLists.txt", "Makefile"}
    | {"mix.exs", "Package.swift", "deno.json"}
)
# The Markdown every code repository carries; it says nothing about keeping notes.
REPOSITORY_DOCS = frozenset(
    {"readme", "changelog", "contributing", "license", "code_of_conduct", "security", "authors"}
    | {"history", "news", "support", "governance", "maintainers", "codeowners"}
)
# The starter copy of AGENTS.md the full-v0.3 contract wants; not for a thin workspace.
STARTER_AGENTS = "templates/AGENTS.md"


@dataclass(frozen=True)
class AdoptPlan:
    root: Path  # the repository's top when the target lies inside one: never a nested repository
    preset: str
    preset_reason: str
    files: list[FileAction]
    excluded: list[str]
    followups: list[str]
    git_init: bool
    findings: int | None = None  # what the kept schema finds today (None: not checked)
    tree: str = ""  # digest of every file already there: an approval is for this tree
    projections: tuple[adapters_mod.Projection, ...] = ()  # --adapter, as 0.4.3 projects them
    conflicts: tuple[dict[str, str], ...] = ()  # what refuses the apply
    target: Path | None = None  # the folder asked for, when the enclosing repository is adopted
    notes: tuple[str, ...] = ()  # what the plan kept as it was (no action left to take)

    @property
    def hash(self) -> str:
        return actions_hash(self.files, excluded=self.excluded, git_init=self.git_init,
                            root=str(self.root), preset=self.preset, tree=self.tree,
                            adapters=[[p.path, p.status, p.data, p.before] for p in self.projections])

    @property
    def replaced(self) -> list[adapters_mod.Projection]:
        return [p for p in self.projections if p.status == "replace"]

    @property
    def repository(self) -> str:
        """Which repository the files land in, as the plan says it."""
        if self.git_init:
            return f"{self.root} (a new repository: git init)"
        if self.target is not None:
            return f"{self.root} (the repository that holds {self.target})"
        return f"{self.root} (existing)"

    def as_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "target": str(self.target or self.root),
            "repository": self.repository,
            "preset": self.preset,
            "preset_reason": self.preset_reason,
            "plan_hash": self.hash,
            "would_create": [f.path for f in self.files if f.action == "create"],
            "kept": [f.path for f in self.files if f.action != "create"],
            "excluded_pre_existing": self.excluded,
            "followups": self.followups,
            "notes": list(self.notes),
            "git_init": self.git_init,
            "existing_findings": self.findings,
            "ratchet": any(f.path == RATCHET[0] for f in self.files),
            "optional_projections": [p.as_json() for p in self.projections],
            "conflicts": list(self.conflicts),
        }


def _files(root: Path) -> list[str]:
    """Every regular file below ``root`` (posix, relative), skipping .git and symlinks."""
    out: list[str] = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not os.path.islink(os.path.join(here, d)))
        rel = Path(here).relative_to(root)
        out.extend((rel / n).as_posix() for n in sorted(names) if not os.path.islink(os.path.join(here, n)))
    return out


def tree_digest(root: Path, files: list[str]) -> str:
    """What is there now, path and bytes, so an approved plan is refused once any of it
    changes (an added, removed or edited file)."""
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.encode() + b"\0" + hashlib.sha256((root / rel).read_bytes()).digest())
    return "sha256:" + h.hexdigest()


def guess_preset(files: list[str]) -> tuple[str, str]:
    """coding for a build manifest, or unless Markdown notes outnumber code files; a
    README, CHANGELOG or LICENSE and Markdown in dot-folders (.github/) are not notes.
    The reason says what was counted."""
    if not files:
        return "coding", "empty folder"
    paths = [Path(f) for f in files]
    code = sum(p.suffix.lower() in CODE_SUFFIXES for p in paths)
    manifests = sorted(p.as_posix() for p in paths if p.name in MANIFESTS)
    notes = sum(p.suffix.lower() in MD_SUFFIXES and p.stem.lower() not in REPOSITORY_DOCS
                and not any(part.startswith(".") for part in p.parts) for p in paths)
    counted = f"{notes} Markdown note(s) vs {code} code file(s)"
    if manifests:
        return "coding", f"build manifest {manifests[0]}; {counted}"
    return ("second-brain" if notes > code else "coding"), counted


def exclusions(files: list[str], scaffold: set[str]) -> list[str]:
    """Schema excludes that keep pre-existing Markdown out of the graph.

    Inside the graph folders each file is excluded by path; elsewhere each top-level
    child holding Markdown, as ``dir/child`` so the pattern matches only that path.
    """
    out: set[str] = set()
    for f in files:
        parts = f.split("/")
        md = Path(f).suffix.lower() in MD_SUFFIXES
        if not md or parts[0] in ALWAYS_EXCLUDED or (f in scaffold and is_shell(f)):
            continue
        if len(parts) == 1 or parts[0] in GRAPH_DIRS:
            out.add(f)
        else:
            out.add("/".join(parts[:2]))
    return sorted(out)


def existing_findings(root: Path) -> int | None:
    """How many findings the working tree's schema reports, graded as the hooks grade
    them; None when the schema cannot be read (doctor says why)."""
    from tropo.check import incremental
    from tropo.check.findings import failing
    from tropo.check.roots import ConfigError
    from tropo.git.snapshot import Source, SourceError

    try:
        return len(failing(incremental.check(root, Source.worktree()).summary.graded(strict=True)))
    except (ConfigError, SourceError):
        return None


def _ratchet_offer(root: Path, findings: int | None, ratchet: bool) -> tuple[dict[str, bytes], str | None]:
    """The hooks file to add (with ``ratchet``) and the follow-up that says why."""
    if ratchet:
        return dict([RATCHET]), (
            f"commit once with --no-verify: {RATCHET[0]} sets mode = \"ratchet\" and hooks read "
            "it from HEAD; from then on only new findings are refused")
    if findings:
        return {}, (f"{findings} existing finding(s) would refuse every commit: rerun with "
                    f"--ratchet to refuse only new ones (`create-vivary adopt {root} --ratchet`)")
    return {}, None


def _read_by_schema(root: Path) -> Callable[[str], bool]:
    """Whether the kept schema would read a file as a document. Such a file would join the
    user's graph and could add a finding there (a second ``SKILL.md`` or ``AGENTS.md`` is
    a duplicate id, an untyped note is refused by a strict schema), so adopt leaves it out;
    a schema that cannot be read leaves out every Markdown file."""
    from tropo.check.document import is_markdown
    from tropo.check.roots import ConfigError
    from tropo.check.workspace import open_workspace
    from tropo.git.snapshot import SourceError

    try:
        ws = open_workspace(root)
        ws.schema  # noqa: B018 -- composing it is what may fail
    except (ConfigError, SourceError):
        return is_markdown
    return ws.reads


def repository_of(target: Path) -> tuple[Path, Path | None, bool]:
    """(root, target when another, git init?): a folder inside a repository is adopted as
    that repository, whose hooks and schema are at its top; never a nested ``git init``."""
    top = gitcli.toplevel(target)
    if top is None:
        return target, None, True
    return (target, None, False) if top == target.resolve() else (top, target, False)


def plan(target: Path, preset: str | None, project: str, ratchet: bool = False,
         adapters: tuple[str, ...] = ()) -> AdoptPlan:
    asked = target.absolute()
    if not asked.is_dir() or asked.is_symlink():
        raise Refused(f"not an existing directory: {asked}")
    root, inner, git_init = repository_of(asked)
    projections, conflicts = adapters_mod.plan(root, adapters)
    existing = _files(root)
    preset, reason = (preset, "given with --preset") if preset else (
        presets.declared(root) or guess_preset(existing))
    has_schema = (root / SCHEMA).exists() or (root / ".vivary/workspace.toml").exists()
    followups = []
    notes = []
    excluded: list[str] = []
    if has_schema:
        notes.append("a schema exists and is kept: only files it does not read as documents are added")
    else:
        excluded = exclusions(existing, set(render(preset, project)))
    files = render(preset, project, extra_excludes=tuple(excluded))
    findings = None
    if has_schema:
        read = _read_by_schema(root)
        left_out = sorted(p for p in files if is_shell(p) and read(p) and not (root / p).exists())
        files = {p: d for p, d in files.items() if is_shell(p) and not read(p)}
        if left_out:
            notes.append(f"left out what the schema would read as documents: {', '.join(left_out)}")
        if not (root / SCHEMA).exists():  # a thin schema reads it as a second `agents`
            files.pop(STARTER_AGENTS, None)
        findings = existing_findings(root)
    extra, offer = _ratchet_offer(root, findings, ratchet)
    files |= extra
    if offer is not None:
        followups.append(offer)
    if (root / ".gitignore").exists():
        safe = not git_init and gitcli.ignored(root, PRIVATE_FILES) == set(PRIVATE_FILES)
        if not safe:
            files = {p: d for p, d in files.items() if p not in PRIVATE_FILES}
            followups.append(
                f"run `create-vivary doctor {root} --repair --yes`: it adds "
                f"{' '.join(PRIVATE_FILES)} {PRIVATE_DIR} to .gitignore, then writes "
                f"{' and '.join(PRIVATE_FILES)}"
            )
    files |= {p.path: p.data for p in projections if p.status in ("create", "clean")}
    actions = [
        a if a.action == "create" else FileAction(a.path, "keep", a.data)
        for a in file_actions(root, files, overwrite=False)
    ]
    followups.append(f"install the hooks: `vivary hooks install --root {root}`")
    return AdoptPlan(root, preset, reason, actions, excluded, followups, git_init, findings,
                     tree_digest(root, existing), tuple(projections), tuple(conflicts),
                     inner, tuple(notes))


def apply(p: AdoptPlan, approved: str) -> dict[str, object]:
    """Carry out the plan whose hash a person approved, under a journal (see
    :mod:`create_vivary.journal`); a failure takes back what was written."""
    journal.refuse_if_unfinished(p.root)
    if approved != p.hash:
        raise Refused(f"plan hash mismatch: approved {approved}, current {p.hash} "
                      "(the tree changed since the plan; review the new plan)")
    if p.conflicts:
        raise Refused("adoption plan has conflicts: " + ", ".join(c["path"] for c in p.conflicts))
    created = [f for f in p.files if f.action == "create"]
    journal.begin(p.root, p.hash, created, git_init=p.git_init, replaced=p.replaced)
    try:
        done = write(p.root, created)
        done += write(p.root, [FileAction(r.path, "overwrite", r.data) for r in p.replaced])
        if p.git_init:
            gitcli.init(p.root)
    except Exception:
        journal.roll_back(p.root, p.hash)
        raise
    journal.finish(p.root)
    return {**p.as_json(), "created": done}
