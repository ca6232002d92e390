"""Helpers for the workbench tests: a real `vivary serve` process in a real repository,
raw HTTP requests whose every header the test chooses, and a run waiting at a gate."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strato.runs.service import Runs
from tests.support.approvals import approve_agents
from tests.support.console import BIN
from tests.support.repos import commit_all, git, write_files
from tests.support.specs import JUDGED

LINE = re.compile(r"vivary: serving http://([0-9.]+):(\d+)/\?token=([A-Za-z0-9_-]+)\n\Z")

SPEC = """\
version: 1
contracts:
  Draft: {text: string}
flows:
  entry: write
  write:
    input: {topic: string}
    output: {from: "${draft.output}", contract: Draft}
    max_rounds: 3
    steps:
      - id: draft
        do: "Write about ${input.topic}"
        out: Draft
        ensure:
          - expr: "len(result.text) > 3"
        attempts: 2
      - id: review
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
"""


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Server:
    proc: subprocess.Popen[str]
    address: str
    port: int
    token: str
    line: str

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/?token={self.token}"

    def request(self, method: str, path: str, headers: dict[str, str] | None = None,
                body: bytes | str | None = None, host: str | None = None, auth: bool = False) -> Answer:
        """One request with exactly these headers (Host too: http.client adds none)."""
        conn = http.client.HTTPConnection(self.address, self.port, timeout=30)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            sent = {"Host": host or f"{self.address}:{self.port}", **(headers or {})}
            if auth:
                sent["Authorization"] = f"Bearer {self.token}"
            data = body.encode() if isinstance(body, str) else body
            if data is not None:
                sent["Content-Length"] = str(len(data))
            for key, value in sent.items():
                conn.putheader(key, value)
            conn.endheaders(data)
            res = conn.getresponse()
            return Answer(res.status, {k.lower(): v for k, v in res.getheaders()}, res.read())
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> Answer:
        return self.request("GET", path, auth=True, **kw)

    def post(self, path: str, doc: Any, **kw: Any) -> Answer:
        headers = {"Content-Type": "application/json", **kw.pop("headers", {})}
        return self.request("POST", path, headers=headers, body=json.dumps(doc), auth=True, **kw)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


def start(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Server:
    """`vivary serve ARGS` as a process; returns once it printed its line."""
    proc = subprocess.Popen([str(BIN / "vivary"), "serve", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = LINE.match(line)
    if found is None:
        proc.kill()
        _, err = proc.communicate(timeout=30)
        raise AssertionError(f"vivary serve printed {line!r}; stderr: {err}")
    return Server(proc, found.group(1), int(found.group(2)), found.group(3), line)


@contextlib.contextmanager
def serving(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Iterator[Server]:
    server = start(*args, cwd=cwd, env=env)
    try:
        yield server
    finally:
        server.stop()


def gated_workspace(root: Path, run_id: str = "r1") -> Path:
    """A committed repository with a run of SPEC waiting at its `review` gate (the draft
    reported in consumer mode: one rejected attempt, then an accepted one)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    write_files(root, {"flow.yaml": SPEC})
    commit_all(root, "a flow")
    plan_waiting(root, run_id)
    return root


def plan_waiting(root: Path, run_id: str) -> None:
    runs = Runs(root)
    runs.plan(SPEC, {"topic": "bees"}, run_id)
    report_draft(root, run_id, "no")
    report_draft(root, run_id, "bees are busy")


def report_draft(root: Path, run_id: str, text: str) -> None:
    runs = Runs(root)
    token = next(s["dispatchToken"] for s in runs.engine(runs.load(run_id)).ready() if s["id"] == "draft")
    runs.done(run_id, "draft", token, {"output": {"text": text}, "usage": {"tokens": 12, "usd": 0.01}})


def gate_token(root: Path, run_id: str) -> str:
    return str(next(g["gateToken"] for g in Runs(root).gates() if g["runId"] == run_id))




def judged_workspace(root: Path) -> Path:
    """A repository whose judge is a script (it fails outputs containing RUDE): every
    judged ensure is evidence for the lane main/w/claude."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    judge = root / ".vivary" / "judge.py"
    write_files(root, {".vivary/judge.py": (
        "import json, sys\n"
        "print(json.dumps({'holds': 'RUDE' not in sys.argv[1], 'reason': 'checked'}))\n")})
    argv = json.dumps([sys.executable, str(judge), "{prompt}"])
    write_files(root, {".vivary/agents.toml": f"[judge]\nargv = {argv}\ntimeout_s = 60\n"})
    commit_all(root, "a judge")
    approve_agents(root)
    return root


def judged_run(root: Path, run_id: str, text: str) -> None:
    runs = Runs(root)
    snap = runs.plan(JUDGED, {}, run_id).snap
    runs.done(run_id, "w", snap.state["scope"]["steps"]["w"]["dispatchToken"], {"output": {"text": text}})
