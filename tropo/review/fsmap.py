"""``tropo map``: a brownfield inventory of any folder, no config needed.

The walk (I/O) yields directories and file sizes, never following links or leaving
the root; :func:`inventory` (pure) rolls them up into the JSON vivary-tropo prints:
directories, dominant extensions, largest files, index files and likely modules that
have no index, plus how many of those candidate modules do have one.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tropo.check.config import ConfigError, is_excluded
from tropo.git.snapshot import walk as walk_tree

SKIP_DIRS = (".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build", ".astro",
             ".next", "target")
INDEX_NAMES = ("index.md", "readme.md")
TOP = 10
MODULE_MIN_FILES = 5


def skip_patterns(root: Path) -> list[str]:
    """The fixed skips plus the enclosing workspace's excludes, rebased onto ``root``;
    a missing or broken config never blocks the map."""
    from tropo.check.workspace import open_workspace

    patterns = set(SKIP_DIRS)
    try:
        ws = open_workspace(root)
        excludes, top = ws.config.exclude, ws.root
    except (ConfigError, OSError, ValueError):
        return sorted(patterns)
    rel = root.resolve().relative_to(top).as_posix()
    prefix = "" if rel == "." else rel + "/"
    for pat in excludes:
        p = pat.replace("\\", "/").rstrip("/")
        if p and ("/" not in p or not prefix):
            patterns.add(p)
        elif p.startswith(prefix) and p[len(prefix):]:
            patterns.add(p[len(prefix):])
    return sorted(patterns)


def walk(root: Path, skip: list[str]) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """(dir relative to root, [(file name, size)]) for every kept directory; links and
    excluded paths are left out, so nothing is counted twice or outside the root."""
    for rel_dir, found in walk_tree(root, lambda rel: is_excluded(rel, skip)):
        yield rel_dir, [(rel.rpartition("/")[2], st.st_size) for rel, st in found if stat.S_ISREG(st.st_mode)]


@dataclass
class _Dir:
    files: int = 0
    size: int = 0
    exts: Counter[str] = field(default_factory=Counter)
    has_index: bool = False


def _ext(name: str) -> str:
    return os.path.splitext(name)[1].lower() or "(none)"


def _counts(c: Counter[str], n: int) -> list[dict[str, Any]]:
    return [{"extension": e, "count": k} for e, k in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def inventory(label: str, tree: Iterable[tuple[str, list[tuple[str, int]]]], *, depth: int,
              max_entries: int | None, skip: list[str]) -> dict[str, Any]:
    own: dict[str, _Dir] = {}
    all_files: list[tuple[str, int]] = []
    index_files: list[str] = []
    for rel_dir, files in tree:
        d = own.setdefault(rel_dir, _Dir())
        for name, size in files:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            all_files.append((rel, size))
            d.files += 1
            d.size += size
            d.exts[_ext(name)] += 1
            if name.lower() in INDEX_NAMES:
                d.has_index = True
                index_files.append(rel)
    total = {k: _Dir(v.files, v.size, Counter(v.exts), v.has_index) for k, v in own.items()}
    for k in sorted(own, key=lambda k: -k.count("/") if k else 1):
        if k:
            parent = total[k.rpartition("/")[0]]
            parent.files += total[k].files
            parent.size += total[k].size
            parent.exts.update(total[k].exts)
    candidates = [k for k, v in total.items() if k and k.count("/") < 2 and v.files >= MODULE_MIN_FILES]
    rows = sorted(
        ({"path": k or ".", "depth": k.count("/") + 1 if k else 0, "files": v.files, "size": v.size,
          "dominant_extensions": _counts(v.exts, 3), "has_index": v.has_index}
         for k, v in total.items() if (k.count("/") + 1 if k else 0) <= depth),
        key=lambda r: (r["depth"], r["path"]))
    return {
        "root": label, "depth": depth,
        "summary": {
            "total_files": len(all_files), "total_dirs": len(own),
            "extensions_top": _counts(Counter(_ext(p) for p, _ in all_files), TOP),
            "largest_files": [{"path": p, "size": s}
                              for p, s in sorted(all_files, key=lambda fs: (-fs[1], fs[0]))[:TOP]],
            "index_files": sorted(index_files),
            "likely_modules_without_index": sorted(k for k in candidates if not own[k].has_index),
            "index_coverage": {"module_dirs": len(candidates),
                               "with_index": sum(1 for k in candidates if own[k].has_index)},
        },
        "directories": rows[:max_entries] if max_entries is not None else rows,
        "skip_patterns": skip,
    }
