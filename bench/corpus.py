"""A synthetic workspace for the retrieval benchmark: typed nodes with ref edges and prose
bodies, committed to a real git repository. Deterministic for a given size and seed."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

CONFIG = """\
version = 1
[base]
derive = ["id", "title"]
optional = { tags = "string-list" }

[types.module]
folder = "modules"
required = { status = "enum:active|draft", area = "string" }
optional = { depends_on = "ref-list" }

[types.change]
folder = "changes"
required = { status = "enum:planned|active|done" }
optional = { related_modules = "ref-list", supersedes = "ref" }

[types.decision]
folder = "decisions"
required = { status = "enum:proposed|accepted", date = "date" }
optional = { affects = "ref-list" }
"""

_SYLLABLES = ["ka", "ro", "mi", "te", "lu", "sa", "no", "vi", "de", "pa", "zu", "qe", "ry", "bo", "fi"]
TYPES = (("modules", "module"), ("changes", "change"), ("decisions", "decision"))


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def _node_text(rng: random.Random, kind: str, ids: list[str], words: list[str], i: int) -> str:
    title = " ".join(rng.choice(words) for _ in range(3)).capitalize()
    fm = {"module": f"status: active\narea: {rng.choice(words)}\n",
          "change": "status: planned\n",
          "decision": "status: accepted\ndate: 2026-01-01\n"}[kind]
    field = {"module": "depends_on", "change": "related_modules", "decision": "affects"}[kind]
    targets = sorted({rng.choice(ids[: max(1, i)]) for _ in range(rng.randint(1, 3))})
    body = "\n\n".join(
        " ".join(rng.choice(words) for _ in range(rng.randint(20, 60))) + "."
        for _ in range(rng.randint(2, 5))
    )
    return (f"---\n{fm}{field}: [{', '.join(targets)}]\ntags: [{rng.choice(words)}]\n---\n"
            f"# {title}\n\n{body}\n")


def generate(root: Path, nodes: int, seed: int = 7) -> list[str]:
    """Write ``nodes`` documents under ``root`` (plus tropo.toml); return their ids."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    ids = [f"n{i:06d}" for i in range(nodes)]
    (root / "tropo.toml").write_text(CONFIG)
    for i, nid in enumerate(ids):
        folder, kind = TYPES[i % len(TYPES)]
        path = root / folder / f"g{i // 500:03d}" / f"{nid}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_node_text(rng, kind, ids, words, i))
    return ids


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def init_repo(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.com")


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()
