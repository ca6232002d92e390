"""``create-vivary doctor``: is this a healthy workspace, and what would fix it?

Errors are what makes the workspace unsafe or wrong (a private file git would commit,
a graph finding, an invalid schema); warnings are what it lacks of ours (a baseline
file, a hook, the coordination pack). A workspace made by an older create-vivary is
compatible when it has no errors; each warning carries the repair that adds what is
missing. Safe repairs only add files, append ignore rules or install hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from create_vivary import presets
from create_vivary.plan import Refused, project_name
from create_vivary.scaffold import PRIVATE_DIR, PRIVATE_FILES, is_shell, render
from hooks import graph as hooks_graph
from hooks import install as hooks_install
from hooks.scripts import DEFAULT_HOOKS
from tropo.check import ratchet
from tropo.check.config import THIN_CONFIG, THIN_CONTRACT, Config, ConfigError, is_excluded
from tropo.check.findings import Finding, failing
from tropo.check.workspace import open_workspace
from tropo.fs.rooted import write_within
from tropo.git import gitcli


class NotARepository(ValueError):
    """Outside any repository there is nothing to diagnose but that (a usage error)."""


@dataclass
class Repair:
    kind: str
    path: str
    summary: str
    status: str  # safe | manual | applied | failed
    run: Callable[[], None] | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "path": self.path,
            "summary": self.summary,
            "status": self.status,
        }


@dataclass
class DoctorReport:
    root: Path
    contract: str = "none"
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    graph: dict[str, int] | None = None
    hooks: dict[str, str] = field(default_factory=dict)
    tolerated: list[str] = field(default_factory=list)  # old findings a ratchet lets stay
    repairs: list[Repair] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "root": str(self.root),
            "contract": self.contract,
            "errors": self.errors,
            "warnings": self.warnings,
            "tolerated": self.tolerated,
            "graph": self.graph,
            "hooks": self.hooks,
            "repairs": [r.as_json() for r in self.repairs],
        }


def _preset_of(root: Path) -> str:
    found = presets.declared(root)
    return found[0] if found else "coding"


def _contract(root: Path, types: set[str]) -> str:
    if (root / THIN_CONFIG).is_file() and not (root / "tropo.toml").is_file():
        return THIN_CONTRACT
    return "full-v0.3" if "implementation_slice" in types else "vivary-git"


def _check_graph(report: DoctorReport) -> Config | None:
    """The graph's findings as errors; the workspace's schema, when it has a valid one."""
    root = report.root
    if not (root / "tropo.toml").is_file() and not (root / THIN_CONFIG).is_file():
        report.errors.append(f"not a Vivary workspace: no tropo.toml or {THIN_CONFIG}")
        report.repairs.append(Repair("workspace", ".", f"run `create-vivary adopt {root}`", "manual"))
        return None
    try:
        ws = open_workspace(root)
        graph = ws.graph()
        findings = failing(ws.check().findings)
    except ConfigError as exc:
        report.errors.append(f"schema invalid: {exc}")
        return None
    report.contract = _contract(root, set(ws.config.types))
    report.graph = {
        "nodes": len(graph.nodes),
        "edges": len(graph.edges),
        "broken": sum(e.broken for e in graph.edges),
    }
    new = _new_findings(report, findings)
    for f in findings:
        line = f"graph: {f.path}:{f.line}: {f.code} {f.message}"
        (report.errors if any(f is n for n in new) else report.tolerated).append(line)
    if new:
        report.repairs.append(Repair("graph", ".", "fix what `tropo check` lists", "manual"))
    if "assignee" not in ws.config.base_optional:
        report.warnings.append("coordination pack missing: claims cannot set assignee")
        report.repairs.append(
            Repair("coordination-pack", ws.config_file, 'add packs = ["coordination"]', "manual")
        )
    return ws.config


def _new_findings(report: DoctorReport, findings: list[Finding]) -> list[Finding]:
    """The findings the hooks would refuse: all of them, or under the working tree's
    ratchet (``.vivary/hooks.toml``) those HEAD lacks; the rest are tolerated."""
    path = report.root / hooks_graph.CONFIG
    if not findings or path.is_symlink() or not path.is_file():
        return findings
    try:
        mode = hooks_graph.mode_of(path.read_text(encoding="utf-8"), hooks_graph.CONFIG)
    except (OSError, UnicodeError, hooks_graph.HookConfigError) as exc:
        report.errors.append(f"hooks config invalid: {exc}")
        return findings
    if mode != "ratchet" or hooks_graph.commit(report.root, "HEAD") is None:
        return findings
    return ratchet.new_since(findings, ratchet.findings_at(report.root, "HEAD"))


def _check_privacy(report: DoctorReport, *, repository: bool = True) -> None:
    root = report.root
    probes = [*PRIVATE_FILES, PRIVATE_DIR + "probe.md"]
    if repository:
        ruled = gitcli.ignored(root, probes, rules_only=True)
        tracked = gitcli.tracked(root, probes)
    else:
        ruled, tracked = gitcli.ignored_outside(root, probes), set()
    rules = []
    for probe in probes:
        shown = PRIVATE_DIR if probe.startswith(PRIVATE_DIR) else probe
        if probe in ruled and probe not in tracked:
            continue
        if probe not in ruled:
            rules.append(shown)
        if probe in tracked:
            report.errors.append(f"private file is tracked by git: {probe}")
            report.repairs.append(
                Repair("untrack", probe, f"git rm --cached {probe} (keeps your copy)", "manual")
            )
        elif (root / probe).exists():
            report.errors.append(f"private file not ignored by git: {probe}")
        else:
            report.warnings.append(f"no ignore rule for private path: {shown}")
    if rules:

        def append() -> None:
            path = root / ".gitignore"
            old = path.read_text(encoding="utf-8") if path.is_file() else ""
            sep = "" if not old or old.endswith("\n") else "\n"
            text = old + sep + "# Vivary private context\n" + "".join(r + "\n" for r in rules)
            write_within(root, ".gitignore", text.encode())

        report.repairs.append(Repair("gitignore", ".gitignore", "append " + " ".join(rules), "safe", append))


def _check_baseline(report: DoctorReport, schema: Config | None) -> None:
    """Shell files of ours the workspace lacks; never a Markdown file its schema would
    read as a document (an older schema does not exclude it)."""
    root = report.root
    files = render(_preset_of(root), project_name(root, None))
    for rel, data in files.items():
        if not is_shell(rel) or rel == ".gitignore" or (root / rel).exists():
            continue
        if rel.endswith(".md") and schema is not None and not is_excluded(rel, schema.exclude):
            continue
        report.warnings.append(f"missing baseline file: {rel}")

        def add(rel: str = rel, data: bytes = data) -> None:
            if rel in PRIVATE_FILES and rel not in gitcli.ignored(root, [rel]):
                raise Refused(f"{rel} would not be ignored by git")
            write_within(root, rel, data)

        report.repairs.append(Repair("add-file", rel, f"add {rel} from the template", "safe", add))


def _check_hooks(report: DoctorReport) -> None:
    states = hooks_install.status(report.root, DEFAULT_HOOKS)
    report.hooks = {s.name: s.state for s in states}
    missing = [s for s in states if s.state != "installed"]
    for s in missing:
        report.warnings.append(f"hook {s.name} is {s.state}")
    if missing:
        report.repairs.append(
            Repair(
                "hooks",
                "hooks",
                "vivary hooks install (an existing hook of yours is chained)",
                "safe",
                lambda: _install_hooks(report.root),
            )
        )


def _install_hooks(root: Path) -> None:
    hooks_install.install(root, DEFAULT_HOOKS)


def diagnose(root: Path) -> DoctorReport:
    top = gitcli.toplevel(root)
    report = DoctorReport(root.resolve())
    if top is None and _contract(root, set()) == THIN_CONTRACT:
        # create-vivary 0.4's init seeds a folder without `git init`: healthy, not finished.
        report.warnings.append("not a git repository yet: privacy judged from .gitignore alone; "
                               "no hooks, no baseline files until `git init`")
        report.repairs.append(Repair("git-init", ".", f"git init {root}", "manual"))
        _check_graph(report)
        _check_privacy(report, repository=False)
        return report
    if top is None:
        raise NotARepository(f"not a git repository: {report.root} (run `git init` there, or "
                             f"`create-vivary adopt {report.root}`, which does)")
    if top != report.root:
        report.errors.append("not the root of a git repository")
        report.repairs.append(Repair("git-init", ".", f"git init {root}", "manual"))
        _check_graph(report)
        return report
    schema = _check_graph(report)
    _check_privacy(report)  # before baseline: its repair makes private files safe to add
    _check_baseline(report, schema)
    _check_hooks(report)
    return report


def repair(report: DoctorReport) -> list[Repair]:
    """Apply the safe repairs in order; each says whether it worked."""
    for r in report.repairs:
        if r.status != "safe" or r.run is None:
            continue
        try:
            r.run()
            r.status = "applied"
        except (OSError, Refused, gitcli.GitError, hooks_install.HookConflict) as exc:
            r.status = "failed"
            r.summary += f" ({exc})"
    return report.repairs
