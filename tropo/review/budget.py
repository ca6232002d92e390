"""The context-budget review pack: routing and startup surfaces grown too large, module
folders without an index, cues telling agents to bulk-load context, and routing blocks
copied across surfaces, with the suite's thresholds and wording.

It reads only public routing files (the root contracts and the module indexes), never
memory, heartbeat reports or ``.vivary``. Pure: the caller lists the files and reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# (max lines, max chars) per root routing contract.
ROOT_SURFACES = {
    "AGENTS.md": (160, 10000),
    "CLAUDE.md": (160, 10000),
    "STRATO.md": (160, 10000),
    "SOUL.md": (160, 10000),
    "STATE.md": (80, 4000),
    "README.md": (250, 15000),
}
MODULE_INDEX = (120, 8000)
BULK_VERBS = ("read", "load", "scan", "open")
BULK_TARGETS = (
    "whole repo", "entire repo", "full repo", "whole repository", "entire repository",
    "entire docs", "whole docs", "full docs", "docs tree", "docs folder",
    "whole folder", "entire folder", "all files", "everything",
)
NEGATIONS = ("do not", "don't", "dont", "never", "avoid")
MIN_BLOCK = 100  # a repeated block shorter than this is boilerplate, not routing truth


@dataclass(frozen=True)
class Files:
    """The workspace's files as git sees them: relative path -> whether it is a regular
    file (a symlink is listed but never read), and a reader of one file's bytes."""

    paths: Mapping[str, bool]
    read: Callable[[str], bytes | None]

    def is_file(self, rel: str) -> bool:
        return self.paths.get(rel, False)

    def text(self, rel: str) -> str | None:
        """A file as the suite reads it: UTF-8 (a BOM dropped, bad bytes replaced) with
        universal newlines."""
        data = self.read(rel) if self.is_file(rel) else None
        if data is None:
            return None
        text = data.decode("utf-8-sig", "replace")
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def children(self, folder: str) -> tuple[list[str], list[str]]:
        """(sub-folder names, file names) directly inside ``folder``, each sorted."""
        prefix = folder + "/"
        folders: set[str] = set()
        files: set[str] = set()
        for rel in self.paths:
            if rel.startswith(prefix):
                name, sep, _ = rel[len(prefix):].partition("/")
                (folders if sep else files).add(name)
        return sorted(folders), sorted(files)


def _surface(files: Files, rel: str, threshold: tuple[int, int], kind: str) -> dict[str, Any] | None:
    text = files.text(rel)
    return None if text is None else {"path": rel, "text": text, "threshold": threshold,
                                      "kind": kind}


def surfaces(files: Files) -> list[dict[str, Any]]:
    """The public routing surfaces: root contracts (by name), then the module indexes."""
    found = [_surface(files, name, ROOT_SURFACES[name], "root") for name in sorted(ROOT_SURFACES)]
    found.append(_surface(files, "modules/index.md", MODULE_INDEX, "module-index"))
    folders, _ = files.children("modules")
    found += [_surface(files, f"modules/{name}/index.md", MODULE_INDEX, "module-index")
              for name in folders]
    return [s for s in found if s is not None]


def bulk_load_cue(line: str) -> bool:
    text = " ".join(line.lower().replace("-", " ").split())
    if any(neg in text for neg in NEGATIONS):
        return False
    return any(verb in text for verb in BULK_VERBS) and any(t in text for t in BULK_TARGETS)


def routing_blocks(text: str) -> list[str]:
    blocks = (" ".join(raw.split()).strip().lower() for raw in text.split("\n\n"))
    return [block for block in blocks if len(block) > MIN_BLOCK]


def context_budget(files: Files) -> list[dict[str, Any]]:
    """The pack's findings in the suite's order: missing module indexes, legacy module
    files, then per surface its size and bulk-load cues, then repeated blocks."""
    out: list[dict[str, Any]] = []
    folders, names = files.children("modules")
    for name in folders:
        if not files.is_file(f"modules/{name}/index.md"):
            out.append({"severity": "warn", "rule": "module-index-missing",
                        "path": f"modules/{name}/index.md",
                        "message": f"module directory 'modules/{name}' is missing index.md"})
    for name in names:
        index = f"modules/{name[:-3]}/index.md"
        if files.is_file(f"modules/{name}") and name.endswith(".md") and name != "index.md" \
                and files.is_file(index):
            out.append({"severity": "warn", "rule": "legacy-module-file",
                        "path": f"modules/{name}",
                        "message": f"legacy module file duplicates '{index}'"})
    found = surfaces(files)
    repeated: dict[str, list[str]] = {}
    for surface in found:
        for block in routing_blocks(surface["text"]):
            owners = repeated.setdefault(block, [])
            if surface["path"] not in owners:
                owners.append(surface["path"])
    for surface in found:
        path, text = surface["path"], surface["text"]
        lines = text.splitlines()
        max_lines, max_chars = surface["threshold"]
        if len(lines) > max_lines or len(text) > max_chars:
            out.append({"severity": "info",
                        "rule": "module-index-large" if surface["kind"] == "module-index"
                        else "always-on-large",
                        "path": path, "estimated_tokens": (len(text) + 3) // 4,
                        "message": f"{path} is {len(lines)} line(s), {len(text)} char(s); "
                                   f"keep routing surfaces under {max_lines} line(s) or "
                                   f"{max_chars} char(s)"})
        out += [{"severity": "info", "rule": "bulk-load-cue", "path": path,
                 "message": f"{path}:{number} encourages bulk-loading context; "
                            "route agents through targeted indexes instead"}
                for number, line in enumerate(lines, start=1) if bulk_load_cue(line)]
    for block in sorted(repeated):
        owners = repeated[block]
        if len(owners) >= 2:
            out.append({"severity": "info", "rule": "duplicate-routing-block", "path": owners[0],
                        "message": f"routing block is repeated across {', '.join(owners)}; "
                                   "keep durable truth in one owner and link to it"})
    return out
