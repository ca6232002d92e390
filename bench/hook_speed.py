"""How long the pre-commit and pre-push hooks take on a large workspace, for a one-file change.

Builds a coding workspace with N extra change nodes (default 20,000), commits it
without hooks, then stages one edited node and runs the installed hook the way git
does, cold (no parse cache) and warm. Then it commits that edit and runs the pre-push
hook for it against a bare remote holding the commit before (the graph at the pushed
tip, judged against the remote's tip), first and again. Prints wall and CPU seconds and
the ratio to a bare interpreter start, the floor any Python hook pays. Run under load,
trust CPU.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
NODE = "---\nproject: bench\nstatus: planned\nslice: s{i}\nrelated_modules: [codebase]\n---\n# C{i}\n"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _timed(argv: list[str], cwd: Path, stdin: bytes = b"") -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user+sys of the child) and exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True,
                          check=False).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code


def build(root: Path, nodes: int) -> None:
    subprocess.run([str(BIN / "create-vivary"), "init", str(root), "--yes"], check=True,
                   capture_output=True)
    for i in range(nodes):
        (root / "changes" / f"c{i:05d}.md").write_text(NODE.format(i=i))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--no-verify", "-m", "bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        build(root, args.nodes)
        hook = [str(root / ".git/hooks/pre-commit")]
        floor = _timed([sys.executable, "-I", "-c", "pass"], root)
        edited = root / "changes" / "c00000.md"
        rows = []
        for label in ("cold", "warm", "warm"):
            edited.write_text(edited.read_text() + "more\n")
            _git(root, "add", str(edited))
            rows.append((label, *_timed(hook, root)))
        print(f"pre-commit hook, {args.nodes + 9} nodes, one staged edit ({os.cpu_count()} cpus)")
        print(f"  interpreter floor      wall {floor[0]:.3f}s  cpu {floor[1]:.3f}s")
        _rows(rows, floor)
        print("pre-push hook, one pushed commit ahead of the remote's tip")
        _rows(_push_rows(root), floor)


def _rows(rows: list[tuple[str, float, float, int]], floor: tuple[float, float, int]) -> None:
    for label, wall, cpu, code in rows:
        print(f"  {label:5} exit {code}        wall {wall:.3f}s  cpu {cpu:.3f}s"
              f"  ({cpu / max(floor[1], 1e-3):.1f}x floor cpu)")


def _push_rows(root: Path) -> list[tuple[str, float, float, int]]:
    _git(root, "commit", "-q", "--no-verify", "-m", "edit")
    bare = root.parent / "remote.git"
    _git(root.parent, "init", "-q", "--bare", str(bare))
    _git(root, "remote", "add", "origin", str(bare))
    _git(root, "push", "-q", "--no-verify", "origin", "HEAD~1:refs/heads/main")
    tip, base = (subprocess.run(["git", "rev-parse", rev], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip() for rev in ("HEAD", "HEAD~1"))
    stdin = f"refs/heads/main {tip} refs/heads/main {base}\n".encode()
    hook = [str(root / ".git/hooks/pre-push"), "origin", str(bare)]
    return [(label, *_timed(hook, root, stdin)) for label in ("first", "again")]


if __name__ == "__main__":
    main()
