"""A stand-in `[agents.distill]` agent: argv is MODE LOG PROMPT; it logs each prompt and
answers as MODE says (an honest rewrite, or a hostile answer)."""

from __future__ import annotations

import json
import sys
import time

mode, log, prompt = sys.argv[1], sys.argv[2], sys.argv[3]
with open(log, "a", encoding="utf-8") as fh:
    fh.write(json.dumps(prompt) + "\n")
if mode == "lesson":
    print("thinking...", json.dumps({"text": "draft"}))
    print(json.dumps({"text": "Caching the index\nbroke reads; key sk-abcdefghijklmnopqrstu; keep it off"}))
elif mode == "skill":
    print(json.dumps({"text": "# Commit safely\n\nRun the tests, then commit.\nAuth: ghp_abcdefghijklmnopqrstuvwxyz0123"}))
elif mode == "huge":
    sys.stdout.write("{" * 4_000_000 + "x" * 8_000_000)
elif mode == "wrong":
    print(json.dumps({"txt": ["not", "text"]}))
elif mode == "nojson":
    print("Sure! Here is the rewrite: caching broke reads")
elif mode == "sleep":
    time.sleep(600)
