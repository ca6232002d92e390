"""``create-vivary adopt --minimal``: create-vivary 0.4.3's thin adoption, planned.

The thin-v0.3 seed is laid onto an existing tree: missing seed files are created, a
person's own ``AGENTS.md`` and ``.gitignore`` get the Vivary block appended at the end
(a patch bound to the bytes it was planned on), an identical seed file is kept, and
anything else in a seed file's place is a conflict that refuses the apply. The plan
hash binds the target folder itself (path, device, inode), each planned change and the
bytes of each kept file, with 0.4.3's payload, so either tool's hash approves the
other's plan of the same folder. Read-only: :mod:`create_vivary.thin_journal` writes.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from create_vivary import adapters as adapters_mod
from create_vivary import inventory, prejournal, thin
from create_vivary.plan import Refused
from create_vivary.thin import digest
from tropo.git import gitcli

AGENTS_START, AGENTS_END = "<!-- vivary:context:start -->", "<!-- vivary:context:end -->"
IGNORE_START, IGNORE_END = "# >>> vivary private/runtime >>>", "# <<< vivary private/runtime <<<"
CONFIG, CONTEXT = ".vivary/workspace.toml", ".vivary/context.md"
# The paths whose ignoring 0.4.3 requires, each with the file it asks git about.
PRIVACY_PROBES = {".vivary/private/": ".vivary/private/secret.md",
                  ".vivary/runtime/": ".vivary/runtime/adopt-journal.json",
                  "*.vivary-tmp": ".vivary-output.vivary-tmp"}
ACTIVE_PROBES = {".cocoindex_code/": ".cocoindex_code/private-index.db"}


def approval_hash(payload: dict[str, Any]) -> str:
    return digest(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode())


def path_key(rel: str) -> list[str]:
    """Sort as 0.4.3 sorts its paths: part by part."""
    return rel.split("/")


def appended(existing: bytes, block: str) -> str:
    """The text a patch adds at the end: a blank line between, never a lost newline."""
    if not existing:
        return block
    return ("\n" if existing.endswith((b"\n", b"\r")) else "\n\n") + block


def identity(root: Path) -> dict[str, str | int]:
    """The one folder an approval is for, not only its contents."""
    try:
        resolved = root.resolve(strict=True)
        info = os.stat(resolved, follow_symlinks=False)
    except OSError as exc:
        raise Refused(f"cannot bind adoption plan to target root: {exc}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise Refused("adoption target root must be a regular non-link directory")
    return {"canonical_path": os.path.normcase(str(resolved)), "device": int(info.st_dev),
            "inode": int(info.st_ino)}


def probes(active_context: str | None) -> dict[str, str]:
    return PRIVACY_PROBES | (ACTIVE_PROBES if active_context == "cocoindex-code" else {})


def _workspace_table(root: Path) -> dict[str, Any] | None:
    path = root / CONFIG
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1024 * 1024:
            return None
        table = tomllib.loads(path.read_text(encoding="utf-8-sig")).get("workspace")
    except (OSError, UnicodeError, tomllib.TOMLDecodeError):
        return None
    return table if isinstance(table, dict) and table.get("contract") == thin.CONTRACT else None


def declared_active_context(root: Path) -> str | None:
    table = _workspace_table(root)
    return "cocoindex-code" if table and table.get("capabilities", []) == ["cocoindex-code"] else None


def _existing_contract(root: Path, preset: str, adapters: tuple[str, ...]) -> tuple[bool, bool, str | None]:
    """Whether the workspace config already there is this policy's, whether its project
    capsule checks clean, and the active context it declares."""
    table = _workspace_table(root)
    if (table is None or table.get("preset") != preset
            or sorted(table.get("adapters", [])) != sorted(adapters)):
        return False, False, None
    active = declared_active_context(root)
    context = root / CONTEXT
    if context.is_symlink() or not context.is_file() or context.stat().st_size > 1024 * 1024:
        return True, False, active
    return True, _clean_project(root), active


def _clean_project(root: Path) -> bool:
    """``.vivary/context.md`` is a project node with no findings of its own."""
    from tropo.check.workspace import open_workspace

    try:
        docs, _ = open_workspace(root, use_cache=False).analyzed
    except Exception:  # any reason the schema cannot be read: not a valid capsule
        return False
    return any(d.rel == CONTEXT and d.type == "project" and not d.findings for d in docs)


@dataclass
class ThinPlan:
    root: Path
    preset: str
    preset_reason: str
    adapters: tuple[str, ...]
    active_context: str | None
    modules: list[str]
    creates: dict[str, bytes] = field(default_factory=dict)  # seed files, then adapters
    adapter_creates: dict[str, bytes] = field(default_factory=dict)
    patches: list[dict[str, str]] = field(default_factory=list)
    replacements: list[dict[str, Any]] = field(default_factory=list)
    projections: list[dict[str, object]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    privacy: str = "planned"

    @property
    def kept_identities(self) -> list[dict[str, str]]:
        out = []
        for rel in self.kept:
            path = self.root / rel
            if path.is_file() and not path.is_symlink():
                out.append({"path": rel, "content_hash": digest(path.read_bytes())})
        return out

    def payload(self) -> dict[str, Any]:
        """What the hash approves, in 0.4.3's shape."""
        writes = self.creates | self.adapter_creates
        return {
            "contract": thin.CONTRACT, "target": identity(self.root), "preset": self.preset,
            "adapters": sorted(self.adapters),
            "capabilities": [self.active_context] if self.active_context else [],
            "creates": [{"path": p, "content_hash": digest(writes[p])} for p in sorted(writes, key=path_key)],
            "patches": [{k: p[k] for k in ("path", "before_hash", "anchor", "inserted_text")}
                        for p in self.patches],
            "adapter_replacements": [{"path": r["path"], "before_hash": r["before_hash"],
                                      "content_hash": digest(r["data"])} for r in self.replacements],
            "kept": self.kept_identities,
        }

    @property
    def hash(self) -> str:
        return approval_hash(self.payload())

    def as_json(self, mode: str) -> dict[str, Any]:
        """0.4.3's adopt report, key for key and in its order."""
        creates = sorted(self.creates, key=path_key)
        return {
            "ok": not self.conflicts, "mode": mode, "recovered": False, "contract": thin.CONTRACT,
            "root": str(self.root), "preset": self.preset, "preset_reason": self.preset_reason,
            "creates": creates, "patches": self.patches, "optional_projections": self.projections,
            "would_create": creates, "kept": self.kept, "conflicts": self.conflicts,
            "privacy": {"status": self.privacy, "rules": list(probes(self.active_context))},
            "plan_hash": self.hash, "recovery_plan_hash": None, "recovery_actions": [],
            "followups": [], "candidate_modules": self.modules, "excluded_pre_existing": [],
            "skipped_module_collisions": [],
        }


def resolve(target: Path) -> Path:
    from create_vivary.minimal import resolve_target

    root = resolve_target(target)
    if not root.exists():
        raise Refused(f"adopt target does not exist: {root}")
    if not root.is_dir():
        raise Refused(f"adopt target is not a directory: {root}")
    return root


def plan(target: Path, preset: str | None, adapters: tuple[str, ...]) -> ThinPlan:
    root = resolve(target)
    found = inventory.scan(root)
    chosen, reason = found.preset(preset)
    if len(set(adapters)) != len(adapters):
        raise Refused("each --adapter value may be selected only once")
    valid_config, valid_context, active = _existing_contract(root, chosen, adapters)
    p = ThinPlan(root, chosen, reason, adapters, active, found.candidate_modules)
    seed = thin.seed(root.name or "vivary-workspace", chosen, adapters, None)
    _seed_files(p, seed, valid_config, valid_context)
    _adapters(p)
    _patched(p, "AGENTS.md", seed["AGENTS.md"], thin.agents_block(), AGENTS_START, AGENTS_END)
    _gitignore(p)
    if p.privacy != "conflict":
        _privacy(p)
    p.patches.sort(key=lambda x: path_key(x["path"]))
    p.kept = sorted(set(p.kept), key=path_key)
    p.conflicts.sort(key=lambda c: path_key(c["path"]))
    return p


def _seed_files(p: ThinPlan, seed: dict[str, bytes], valid_config: bool, valid_context: bool) -> None:
    vivary = p.root / ".vivary"
    bad_dir = vivary.exists() and (vivary.is_symlink() or not vivary.is_dir())
    if bad_dir:
        p.conflicts.append({"path": ".vivary", "reason": ".vivary must be a regular directory"})
    for rel in (CONTEXT, CONFIG, "STATE.md"):
        path = p.root / rel
        if bad_dir and rel.startswith(".vivary/"):
            continue
        if not path.exists():
            p.creates[rel] = seed[rel]
        elif path.is_symlink() or not path.is_file():
            p.conflicts.append({"path": rel, "reason": "destination is not a regular file"})
        elif rel == "STATE.md" or (rel == CONFIG and valid_config) or (rel == CONTEXT and valid_context):
            p.kept.append(rel)
        else:
            p.conflicts.append({"path": rel, "reason": f"existing file is not {thin.CONTRACT}"})


def _adapters(p: ThinPlan) -> None:
    for adapter in sorted(p.adapters):
        one = adapters_mod.project(p.root, adapter)
        p.projections.append({**one.as_json(), "path": one.path})
        if one.status == "create":
            p.adapter_creates[one.path] = one.data
        elif one.status == "clean":
            p.kept.append(one.path)
        elif one.status == "replace":
            before = (p.root / one.path).read_bytes()
            p.replacements.append({"path": one.path, "before_hash": digest(before), "data": one.data})
        else:
            p.conflicts.append({"path": one.path, "reason": str(one.reason)})


def _patched(p: ThinPlan, rel: str, whole: bytes, block: str, start: str, end: str,
             accepted: tuple[str, ...] = ()) -> str:
    """Create, keep, patch or refuse one file that carries a Vivary block; the status."""
    path = p.root / rel
    if not path.exists():
        p.creates[rel] = whole
        return "planned"
    if path.is_symlink() or not path.is_file():
        p.conflicts.append({"path": rel, "reason": f"{rel} is not a regular file"})
        return "conflict"
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        p.conflicts.append({"path": rel, "reason": f"{rel} is not UTF-8"})
        return "conflict"
    if rel == ".gitignore" and (reason := prejournal.conflict(text)):
        p.conflicts.append({"path": rel, "reason": reason})
        return "conflict"
    starts, ends = text.count(start), text.count(end)
    if starts == 1 and ends == 1 and any(b.rstrip() in text for b in (block, *accepted)):
        p.kept.append(rel)
        return "satisfied"
    if starts or ends:
        p.conflicts.append({"path": rel, "reason": "duplicate or malformed Vivary block"})
        return "conflict"
    p.patches.append({"path": rel, "before_hash": digest(data), "anchor": "eof",
                      "inserted_text": appended(data, block)})
    return "planned"


def _gitignore(p: ThinPlan) -> None:
    block = thin.gitignore_block(p.active_context)
    accepted = () if p.active_context else (thin.gitignore_block("cocoindex-code"),)
    p.privacy = _patched(p, ".gitignore", block.encode(), block, IGNORE_START, IGNORE_END, accepted)


def _privacy(p: ThinPlan) -> None:
    """Would git ignore every private path once the plan is applied? A nested or
    contradicting ``.gitignore`` can leave one committable: a conflict at that file."""
    wanted = probes(p.active_context)
    root_rules = _planned_root_rules(p)
    rules = {".gitignore": root_rules} if root_rules is not None else {}
    nested: list[str] = []
    for probe in wanted.values():
        parts = probe.split("/")
        for depth in range(1, len(parts)):
            rel = "/".join(parts[:depth]) + "/.gitignore"
            path = p.root / rel
            if path.exists():
                nested.append(rel)
                if path.is_file() and not path.is_symlink():
                    rules[rel] = path.read_bytes()
    ignored = gitcli.ignored_by_rules(rules, wanted.values())
    missing = [pattern for pattern, probe in wanted.items() if probe not in ignored]
    if not missing:
        return
    p.privacy = "conflict"
    reason = ("nested or contradictory .gitignore rules leave Vivary private/runtime paths "
              "committable: " + ", ".join(missing))
    p.conflicts.extend({"path": rel, "reason": reason} for rel in sorted(set(nested) or {".gitignore"}))


def _planned_root_rules(p: ThinPlan) -> bytes | None:
    """The root ``.gitignore`` as it reads once the plan is applied."""
    if ".gitignore" in p.creates:
        return p.creates[".gitignore"]
    path = p.root / ".gitignore"
    if path.is_symlink() or not path.is_file():
        return None
    data = path.read_bytes()
    patch = next((x for x in p.patches if x["path"] == ".gitignore"), None)
    return data + patch["inserted_text"].encode() if patch else data
