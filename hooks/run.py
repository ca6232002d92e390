"""Entry point of every installed hook: ``python -m hooks.run NAME SCRIPT ARGS...``.

Runs the hook the user had before us (chained) first, with the same arguments and
stdin, then ours. git runs hooks from the work tree root, but we ask git for it so a
hook started by hand from a subdirectory works too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hooks import registry
from hooks.scripts import CHAINED_SUFFIX
from strato.agents.process import detach, run_attached
from tropo.git import gitcli

# git's hook environment describes the commit in progress; the background half outlives it
_HOOK_ENV = ("GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE", "GIT_PREFIX", "GIT_EDITOR", "GIT_REFLOG_ACTION")


def run_chained(script: str, name: str, args: list[str], stdin: bytes) -> int:
    chained = Path(script + CHAINED_SUFFIX)
    if not chained.is_file():
        return 0
    if not os.access(chained, os.X_OK):
        print(f"vivary: chained hook {chained} is not executable; skipped", file=sys.stderr)
        return 0
    code = run_attached([str(chained), *args], stdin=stdin)[0]
    if code:
        print(f"vivary: {name} refused by the chained hook {chained.name}", file=sys.stderr)
    return code


def post_commit(root: Path) -> int:
    """Registered post-commit actions; they report, they never fail the commit."""
    for name, target in sorted(registry.POST_COMMIT.items()):
        try:
            registry.resolve(target)(root)
        except Exception as exc:
            print(f"vivary: post-commit {name} failed: {exc}", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m hooks.run NAME SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    name, script, args = argv[0], argv[1], argv[2:]
    stdin = sys.stdin.buffer.read() if name == "pre-push" else b""
    if name == "post-commit-chained":  # the post-commit script's foreground half
        return run_chained(script, "post-commit", args, stdin)
    if name == "post-commit-actions":  # its background half: on its own, outliving the commit
        detach()
        for key in _HOOK_ENV:
            os.environ.pop(key, None)
    code = 0 if name == "post-commit-actions" else run_chained(script, name, args, stdin)
    if code:
        return code
    root = gitcli.toplevel(Path.cwd())
    if root is None:
        print("vivary: hook run outside a git work tree", file=sys.stderr)
        return 1
    if name in ("pre-commit", "pre-merge-commit"):
        from hooks import precommit

        return precommit.main(root, "merge" if name == "pre-merge-commit" else "commit")
    if name == "pre-push":
        from hooks import prepush

        return prepush.main(root, args, stdin.decode("utf-8", "replace"))
    if name in ("post-commit", "post-commit-actions"):
        return post_commit(root)
    print(f"vivary: unknown hook {name}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
