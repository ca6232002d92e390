"""What create-vivary 0.4.3's adopt counts in an existing tree: Markdown against code
for the preset it guesses, and the folders that look like undocumented modules.

Read-only. Dot folders, build output and the folders a Vivary scaffold makes are
skipped, and the root files Vivary owns do not vote, so adopting twice guesses the
same preset. Adopt --minimal reports both facts as 0.4.3 does, so the counting is its.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build",
                       ".astro", ".next", "target"})
CODE_SUFFIXES = frozenset({
    ".py", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".go", ".rs", ".java", ".kt", ".c",
    ".h", ".cpp", ".cc", ".hpp", ".cs", ".rb", ".php", ".swift", ".m", ".mm", ".scala", ".sh",
    ".ps1", ".sql", ".lua", ".vue", ".svelte",
})
SCAFFOLD_DIRS = frozenset({"templates", "modules", "changes", "decisions", "verification", "gates",
                           "memory", "heartbeat-reports"})
RESERVED_ROOT_FILES = frozenset({"README.md", "AGENTS.md", "SOUL.md", "STRATO.md", "STATE.md",
                                 "USER.md", "MEMORY.md", "bug-risk-playbook.md", "tropo.toml",
                                 ".gitignore"})


@dataclass(frozen=True)
class Inventory:
    markdown: int
    code: int
    candidate_modules: list[str]  # depth 1-2 folders with 5+ Markdown files and no index

    def preset(self, requested: str | None) -> tuple[str, str]:
        """The preset and the reason 0.4.3 gives for it."""
        md, code = self.markdown, self.code
        if requested is not None:
            return requested, f"explicit --preset {requested}"
        if md == 0 and code == 0:
            return "coding", "empty or unrecognized tree; defaulting to coding"
        if md > code:
            return "second-brain", f"markdown-majority tree ({md} .md vs {code} code file(s))"
        if md == code:
            return "coding", f"no file-type majority ({code} code file(s) vs {md} .md); defaulting to coding"
        return "coding", f"code-majority tree ({code} code file(s) vs {md} .md)"


def scan(root: Path) -> Inventory:
    markdown = code = 0
    per_dir: dict[str, int] = {}
    indexed: set[str] = set()
    for here, dirs, names in os.walk(root):
        rel = os.path.relpath(here, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/")
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                         and not (rel == "" and d in SCAFFOLD_DIRS))
        depth = rel.count("/") + 1 if rel else 0
        for name in names:
            if depth == 0 and name in RESERVED_ROOT_FILES:
                continue
            suffix = Path(name).suffix.lower()
            if suffix in (".md", ".markdown"):
                markdown += 1
                if 1 <= depth <= 2:
                    per_dir[rel] = per_dir.get(rel, 0) + 1
                if name.lower() in ("index.md", "readme.md"):
                    indexed.add(rel)
            elif suffix in CODE_SUFFIXES:
                code += 1
    modules = sorted(d for d, n in per_dir.items() if n >= 5 and d not in indexed)
    return Inventory(markdown, code, modules)
