"""`make demo`: build a demo workspace in a temporary folder and tour the main job.

Every command is printed before it runs, then run for real in the demo workspace.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

BIN = Path(sys.executable).parent

CONFIG = """\
version = 1
packs = ["coordination"]
exclude = ["README.md"]

[base]
derive = ["id", "title"]

[types.module]
folder = "modules"
required = { status = "enum:active|draft", module_area = "string" }
optional = { related_changes = "ref-list" }

[types.change]
folder = "changes"
required = { status = "enum:planned|active|done" }
optional = { related_modules = "ref-list", verification = "ref-list" }

[types.verification]
folder = "verification"
required = { status = "enum:planned|passed|failed", target = "string" }
"""

FILES = {
    "tropo.toml": CONFIG,
    "README.md": "# Demo workspace\n",
    "modules/graph/index.md": "---\nstatus: active\nmodule_area: knowledge graph\n---\n# Graph\n",
    "modules/hooks/index.md": "---\nstatus: draft\nmodule_area: git hooks\n"
                              "related_changes: [add-hooks]\n---\n# Hooks\n",
    "changes/add-hooks.md": "---\nstatus: active\nrelated_modules: [hooks, graph]\n"
                            "verification: [hooks-smoke]\n---\n# Add the hooks\n",
    "verification/hooks-smoke.md": "---\nstatus: planned\ntarget: add-hooks\n---\n# Hooks smoke test\n",
}


def say(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}", flush=True)


def make_runner(ws: Path):  # type: ignore[no-untyped-def]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(argv: list[str], check: bool = False) -> int:
        print(f"$ {shlex.join(argv)}", flush=True)
        proc = subprocess.run(argv, cwd=ws, env=env, check=False)
        if check and proc.returncode != 0:
            raise SystemExit(f"demo: {argv[0]} failed with exit {proc.returncode}")
        return proc.returncode

    return run


def tour_tropo(ws: Path, run) -> None:  # type: ignore[no-untyped-def]
    say("a typed graph of Markdown files: check it (strict by default)")
    run(["tropo", "check"], check=True)
    run(["git", "add", "-A"], check=True)
    run(["git", "commit", "-q", "-m", "Demo workspace"], check=True)
    say("break a ref in the working tree: the check names file, line and code")
    broken = ws / "changes" / "add-hooks.md"
    broken.write_text(broken.read_text().replace("[hooks, graph]", "[hooks, grahp]"))
    run(["tropo", "check"])
    say("the committed snapshot is still clean: --rev reads any commit, --staged the index")
    run(["tropo", "check", "--rev", "HEAD"], check=True)
    run(["git", "checkout", "--", "changes/add-hooks.md"], check=True)
    say("the graph and the blast radius of a module")
    run(["tropo", "graph"], check=True)
    run(["tropo", "blast", "hooks"], check=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="vivary-demo-") as tmp:
        ws = Path(tmp) / "workspace"
        ws.mkdir()
        for rel, text in FILES.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        run = make_runner(ws)
        run(["git", "init", "-q", "-b", "main"], check=True)
        run(["git", "config", "user.name", "Demo"], check=True)
        run(["git", "config", "user.email", "demo@example.invalid"], check=True)
        tour_tropo(ws, run)
        say("demo done")


if __name__ == "__main__":
    main()
