"""`make demo`: build a demo workspace in a temporary folder and tour the main job.

Every command is printed before it runs, then run for real in the demo workspace.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Protocol

from bench import (
    demo_bg,
    demo_decide,
    demo_exo,
    demo_flows,
    demo_flowspec,
    demo_guard,
    demo_heartbeat,
    demo_lifecycle,
)

BIN = Path(sys.executable).parent

def say(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}", flush=True)


class Runner(Protocol):
    """Print a command, then run it in the workspace (``check``: stop the demo on failure)."""

    def __call__(self, argv: list[str], check: bool = False) -> None: ...


def make_runner(ws: Path) -> Runner:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(argv: list[str], check: bool = False) -> None:
        print(f"$ {shlex.join(argv)}", flush=True)
        proc = subprocess.run(argv, cwd=ws, env=env, check=False)
        if check and proc.returncode != 0:
            raise SystemExit(f"demo: {argv[0]} failed with exit {proc.returncode}")

    return run


def tour_tropo(ws: Path, run: Runner) -> None:
    say("the typed graph: strict check, any revision, graph and blast radius")
    run(["tropo", "check"], check=True)
    run(["tropo", "check", "--rev", "HEAD~1", "--json"], check=True)
    run(["tropo", "stats"], check=True)
    run(["tropo", "graph"], check=True)
    run(["tropo", "blast", "agent-workspace"], check=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="vivary-demo-") as tmp:
        # what the tour approves (`vivary trust`) goes to a config folder that goes away
        # with the demo's workspace: your own ~/.config/vivary is left as it was
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        say("create-vivary: a committed workspace whose hooks refuse a broken graph")
        ws = demo_lifecycle.tour(Path(tmp), make_runner(Path(tmp)))
        run = make_runner(ws)
        tour_tropo(ws, run)
        say("a governed decision: may the agent act? (capsule from the graph, then a receipt)")
        demo_decide.tour(ws, run)
        demo_exo.tour(ws, run)
        say("a guarded release: refused without evidence, a signed override, its PR review")
        demo_guard.tour(ws, run)
        say("a typed flow: validate the spec, then run it through a human gate")
        demo_flowspec.tour(ws, run)
        demo_flows.tour(ws, run)
        demo_bg.tour(ws)
        demo_heartbeat.tour(ws, run)
        say("demo done")
    vivary = vivary_as_typed()
    print("See it in the workbench (a recorded run of this tour, no repository needed):")
    print(f"  {vivary} serve --demo --open")
    print(f"or on a workspace of your own: {vivary} serve --open --root PATH")
    if vivary != "vivary":
        print(f'To type `vivary` alone, put its folder on PATH: export PATH="{BIN}:$PATH"', flush=True)


def vivary_as_typed() -> str:
    """The `vivary` of this demo as a fresh shell in this folder runs it: the bare name when
    PATH already finds this one, else its path (`.venv/bin/vivary` after `make demo`)."""
    exe = BIN / "vivary"
    found = shutil.which("vivary")
    if found is not None and Path(found).resolve() == exe.resolve():
        return "vivary"
    return shlex.quote(os.path.relpath(exe) if exe.is_relative_to(Path.cwd()) else str(exe))


if __name__ == "__main__":
    main()
