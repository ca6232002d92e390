"""A stand-in agent for tests: answers prompts from a plan file.

Usage: scripted.py PLAN.json PROMPT. The plan is a list of rules
`{"match": "substring", "replies": [reply, ...]}`; the first rule whose `match` occurs in
the prompt answers with its next reply (the last reply repeats). A reply may:
`write` files into the working directory, `sleep` seconds, `say` raw text, `flood` that
many MiB of noise, print `json` (after a chatty line), `exit` with a code. Every prompt
is appended to PLAN.json.log so tests can see what the agent was asked.
"""

import fcntl
import json
import os
import sys
import time
from pathlib import Path

plan_path = Path(sys.argv[1])
prompt = sys.argv[2]
with open(f"{plan_path}.lock", "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    rules = json.loads(plan_path.read_text())
    counts_path = Path(f"{plan_path}.counts")
    counts = json.loads(counts_path.read_text()) if counts_path.exists() else {}
    with open(f"{plan_path}.log", "a") as log:
        log.write(json.dumps({"prompt": prompt, "cwd": os.getcwd()}) + "\n")
    rule_index = next((i for i, r in enumerate(rules) if r["match"] in prompt), None)
    if rule_index is None:
        print("I do not know how to do that.")
        sys.exit(0)
    n = counts.get(str(rule_index), 0)
    counts[str(rule_index)] = n + 1
    counts_path.write_text(json.dumps(counts))
    replies = rules[rule_index]["replies"]
    reply = replies[min(n, len(replies) - 1)]

for rel, text in reply.get("write", {}).items():
    target = Path(rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
if "sleep" in reply:
    time.sleep(reply["sleep"])
if "say" in reply:
    print(reply["say"])
if "flood" in reply:
    chunk = "x" * 1023 + "\n"
    for _ in range(reply["flood"] * 1024):
        sys.stdout.write(chunk)
if "json" in reply:
    print("Working on it... {not json}")
    print(json.dumps(reply["json"]))
sys.stdout.flush()
sys.exit(reply.get("exit", 0))
