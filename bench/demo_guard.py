"""Guard tour: a refused transition, a signed override, and its pull-request review.

``tour(ws, run)`` drives the real commands in the git work tree ``ws``; ``run`` prints
and executes one argv. ``python -m bench.demo_guard`` runs it in a fresh repository.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

POLICY = {
    "resource_id": "release:1.0",
    "graph": {"candidate": ["released"]},
    "initial": "candidate",
    "terminal": ["released"],
    "edge_predicates": {
        "candidate->released": [
            {"id": "notes", "statement": 'server_file_exists("RELEASE_NOTES.md")'}
        ]
    },
}
ASK = {
    "resource_id": "release:1.0",
    "from_state": "candidate",
    "to_state": "released",
    "rationale": "notes ship tomorrow; release approved in the standup",
}


def _guard(ws: Path, op: str, request: Mapping[str, object], *extra: str) -> list[str]:
    """A shell line piping one JSON request into ``strato guard``, echoing its exit code."""
    line = (
        f"echo {shlex.quote(json.dumps(request))} | strato guard {op} --root {shlex.quote(str(ws))}"
    )
    return ["sh", "-c", " ".join([line, *map(shlex.quote, extra)]) + '; echo "exit $?"']


def tour(ws: Path, run: Callable[[list[str]], None]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        key, payload = Path(tmp) / "alice", Path(tmp) / "payload.json"
        git = ["git", "-C", str(ws)]
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", str(key)])
        signers = ws / ".vivary/guard/allowed_signers"
        signers.parent.mkdir(parents=True, exist_ok=True)
        public = " ".join(Path(f"{key}.pub").read_text().split()[:2])
        signers.write_text(f"alice@example.com {public}\n")
        run(["strato", "guard", "pin", "--root", str(ws)])  # the base: no ledgers yet
        run([*git, "add", ".vivary/guard"])
        run([*git, "commit", "-q", "-m", "Trust alice to sign guard overrides"])
        run([*git, "commit", "-q", "--allow-empty", "-m", "Release candidate"])
        run(_guard(ws, "register", POLICY))
        run(
            _guard(ws, "transition", {k: ASK[k] for k in ("resource_id", "from_state", "to_state")})
        )
        kind = {"kind": "override", **ASK}
        run(_guard(ws, "authorize", kind, "--out", str(payload)))
        run(
            [
                "ssh-keygen",
                "-q",
                "-Y",
                "sign",
                "-f",
                str(key),
                "-n",
                "stratum-guard-override",
                str(payload),
            ]
        )
        run(_guard(ws, "override", ASK, "--signature", f"{payload}.sig"))
        run(["strato", "guard", "verify", "--root", str(ws)])
        run(["strato", "guard", "pin", "--from", "local", "--root", str(ws)])  # the change pins its notes
        run([*git, "add", ".vivary/guard/notes-tip"])
        run([*git, "commit", "-q", "-m", "Pin the guard notes"])
        run(["strato", "guard", "review", "--root", str(ws), "--base", "HEAD~2", "--markdown"])


def _run(argv: list[str]) -> None:
    print("$ " + " ".join(shlex.quote(a) for a in argv), flush=True)
    subprocess.run(argv, check=True)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as where:
        root = Path(where) / "ws"
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(
            ["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", "init"], check=True
        )
        tour(root, _run)
    sys.exit(0)
