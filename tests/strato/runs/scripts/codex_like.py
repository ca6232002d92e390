"""A stand-in for `codex exec` that keeps to its sandbox as codex does.

Usage: codex_like.py LOG exec -s MODE -- PROMPT. The prompt names a file (`Write
NAME`); under `-s workspace-write` the agent writes NAME in its working directory (its
writable root), under `-s read-only` it may not and says so. Every call's argv and cwd
are appended to LOG. The answer is Codex's last message: a JSON object."""

import json
import os
import sys
from pathlib import Path

log, rest = Path(sys.argv[1]), sys.argv[2:]
with open(log, "a") as fh:
    fh.write(json.dumps({"argv": rest, "cwd": os.getcwd()}) + "\n")
if rest[:2] != ["exec", "-s"] or rest[3] != "--" or rest[2] not in ("read-only", "workspace-write"):
    print(f"error: unexpected arguments {rest}", file=sys.stderr)
    sys.exit(2)
mode, prompt = rest[2], rest[4]
name = prompt.split("Write ", 1)[1].split()[0]
target = Path.cwd() / name
if mode != "workspace-write" or not target.resolve().is_relative_to(Path.cwd().resolve()):
    print(json.dumps({"file": name, "wrote": False, "reason": f"sandbox {mode}: writing is blocked"}))
    sys.exit(0)
target.write_text(f"written by codex in {mode}\n")
print(json.dumps({"file": name, "wrote": True}))
