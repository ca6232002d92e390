"""Render the workspace files from ``templates/``: pure, so a plan is its own proof.

The result maps root-relative posix paths to bytes. Rendering fills ``{{key}}`` in
both paths and contents and refuses anything left unfilled, any template symlink, and
any path that would leave the target.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import templates
from create_vivary.presets import PRESETS
from tropo.fs.rooted import check_relative

GRAPH_DIRS = ("modules", "changes", "decisions", "verification", "gates")
SKILL_ROOTS = (".claude/skills", ".agents/skills")
PRIVATE_FILES = ("USER.md", "MEMORY.md")
PRIVATE_DIR = ".vivary/private/"
SCHEMA = "tropo.toml"
ALWAYS_EXCLUDED = (".git", ".claude", ".agents", ".vivary")
# The one file adopt writes that no template holds: hooks refuse only new findings.
RATCHET = (".vivary/hooks.toml", b'mode = "ratchet"  # hooks refuse only findings HEAD lacks\n')
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")


class TemplateError(ValueError):
    """A template is unsafe or incomplete."""


def template_root() -> Path:
    return Path(templates.__file__).parent


def _walk(base: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base).as_posix()
        if path.is_symlink():
            raise TemplateError(f"template is a symlink: {rel}")
        if path.is_file() and "__pycache__" not in rel:
            yield rel, path


def _fill(text: str, values: Mapping[str, str], where: str) -> str:
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in values:
            raise TemplateError(f"{where}: no value for {{{{{key}}}}}")
        return values[key]

    return _PLACEHOLDER.sub(sub, text)


def _out_name(rel: str) -> str:
    parts = rel.split("/")
    parts[-1] = "." + parts[-1][4:] if parts[-1].startswith("dot-") else parts[-1]
    return "/".join(parts)


def is_shell(path: str) -> bool:
    """A workspace file that is not part of the graph or its schema."""
    return path != SCHEMA and path.split("/", 1)[0] not in GRAPH_DIRS


def toml_list(items: list[str]) -> str:
    return "[\n" + "".join(f"  {json.dumps(i)},\n" for i in items) + "]"


def render(
    preset: str,
    project: str,
    *,
    extra_excludes: tuple[str, ...] = (),
    today: dt.date | None = None,
    source: Path | None = None,
) -> dict[str, bytes]:
    """Every scaffold file for ``preset``, keyed by its path in the workspace."""
    root = source or template_root()
    values = {
        **PRESETS[preset].values(),
        "project": project,
        "date": (today or dt.date.today()).isoformat(),
    }
    texts: dict[str, str] = {}
    sections = (("base", ("",)), ("preset", ("",)), ("skills", SKILL_ROOTS))
    for section, prefixes in sections:
        for rel, path in _walk(root / section):
            name = _out_name(_fill(rel, values, rel))
            for prefix in prefixes:
                out = f"{prefix}/{name}" if prefix else name
                check_relative(out)
                texts[out] = path.read_text(encoding="utf-8")
    # Shell documents (AGENTS.md, templates/AGENTS.md, ...) guide people and agents; they
    # are not graph nodes. Skills are excluded whole.
    shell_docs = sorted(p for p in texts if p.endswith(".md") and is_shell(p)
                        and p.split("/", 1)[0] not in ALWAYS_EXCLUDED)
    modules = sorted(p.split("/")[1] for p in texts if re.fullmatch(r"modules/[^/]+/index\.md", p))
    values |= {
        "exclude": toml_list([*ALWAYS_EXCLUDED, *shell_docs, *extra_excludes]),
        "module_ids": "[" + ", ".join(modules) + "]",
        "module_rows": "\n".join(f"- `{m}` -> `modules/{m}/index.md`" for m in modules),
    }
    return {p: _fill(t, values, p).encode("utf-8") for p, t in sorted(texts.items())}


def plan_hash(entries: Mapping[str, object]) -> str:
    """A stable digest of a plan: what a reviewer approved is what gets written."""
    blob = json.dumps(entries, sort_keys=True, default=_digest).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def _digest(value: object) -> str:
    if isinstance(value, bytes):
        return hashlib.sha256(value).hexdigest()
    raise TypeError(f"not serialisable: {type(value).__name__}")
