"""``create-vivary adopt --minimal`` side by side with create-vivary 0.4.3's adopt.

Each case builds one repository state twice (``A/repo`` for 0.4.3, ``B/repo`` for ours:
the same folder name, because the project capsule is named after it), runs one command
line in each, and compares exit codes, the files (byte for byte, folders and links by
name, ``.git`` aside), stdout and stderr. What is normalised, and why:

- the copy's absolute path (``<ROOT>``): the two copies cannot share one;
- the plan hash (``<HASH>``, wherever it is printed): it binds the folder's path,
  device and inode, so it differs between copies by design; instead, before the run,
  both tools must plan ``B/repo`` with the same hash;
- an applied report's ``doctor`` (JSON key, text warnings): doctor's report is ours
  (docs/lifecycle.md).

After an apply, both doctors and both ``tropo check``s pass on our result.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from create_vivary import thin
from tests.support.console import BIN
from tests.support.sides import run_side
from tests.support.trees import tree

BLOCK = thin.gitignore_block(None)
NO_TX = "sha256:no-interrupted-plan"


def _git_init(ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True, timeout=60)


def _oracle_adopt(oracle: Path, ws: Path) -> None:
    plan = json.loads(run_side(oracle, ["adopt", str(ws), "--json"], ws.parent).stdout)
    assert run_side(oracle, ["adopt", str(ws), "--yes", "--plan", plan["plan_hash"]], ws.parent).returncode == 0


def _build(state: str, ws: Path, oracle: Path) -> str:
    """One repository state; every state is a git repository unless it says otherwise.
    Returns the plan hash of an interrupted apply (it binds the copy), else a
    placeholder no output contains."""
    if state == "missing":
        return NO_TX
    if state == "a-file":
        ws.write_text("not a folder\n")
        return NO_TX
    if state.startswith("init-0.4.3"):
        extra = ["--active-context", "cocoindex-code", "--adapter", "claude"] if "active" in state else []
        assert run_side(oracle, ["init", str(ws), *extra], ws.parent).returncode == 0
        _git_init(ws)
        return NO_TX
    if state == "through-a-link":
        _git_init(ws.parent / "real")
        ws.symlink_to("real")
        return NO_TX
    ws.mkdir()
    if state != "plain-folder":
        _git_init(ws)
    files: dict[str, bytes] = {
        "own-agents": {"AGENTS.md": b"# Our agents\n\nBe careful.\n"},
        "agents-no-newline": {"AGENTS.md": b"# mine", ".gitignore": b"node_modules"},
        "ignore-with-block": {".gitignore": b"dist/\n" + BLOCK.encode()},
        "ignore-without-block": {".gitignore": b"dist/\n*.log\n"},
        "ignore-malformed": {".gitignore": b"# >>> vivary private/runtime >>>\n.vivary/private/\n"},
        "marker-malformed": {".gitignore": b"dist/\n# vivary-adopt-prejournal plan=junk\n"},
        "agents-not-utf8": {"AGENTS.md": b"\xff\xfe mine\n"},
        "vivary-a-file": {".vivary": b"x\n"},
        "notes-tree": {f"notes/n{i}.md": b"# note\n" for i in range(6)} | {"README.md": b"# notes\n"},
        "code-tree": {"src/app.py": b"print('hi')\n", "src/lib.py": b"x = 1\n", "docs/a.md": b"# a\n"},
        "nested-negation": {".vivary/.gitignore": b"!private/\n"},
        "foreign-config": {".vivary/workspace.toml": b"[workspace]\ncontract = \"other\"\n"},
        "stale-adapter": {thin.ADAPTERS["claude"]: thin.adapter_doc("claude", "create-vivary 0.4.0").encode()},
        "user-adapter": {thin.ADAPTERS["claude"]: b"# my own skill\n"},
        "own-state": {"STATE.md": b"# State\n\nbusy\n", "README.md": b"Preset: writing\n"},
    }.get(state, {})
    for rel, data in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
    if state == "agents-symlink":
        (ws / "README.md").write_text("# readme\n")
        (ws / "AGENTS.md").symlink_to("README.md")
    if state == "agents-a-folder":
        (ws / "AGENTS.md").mkdir()
    if state == "gitignore-a-folder":
        (ws / ".gitignore").mkdir()
    if state == "read-only-agents":  # as root this refuses nothing, for either tool
        (ws / "AGENTS.md").write_text("# mine\n")
        (ws / "AGENTS.md").chmod(0o444)
    if state == "adopted":
        _oracle_adopt(oracle, ws)
    if state == "interrupted":  # 0.4.3 stopped after its first action: a journal is left
        return _interrupt(oracle, ws, "1", [])
    return NO_TX


STATES = ("empty-repo", "plain-folder", "own-agents", "agents-no-newline", "ignore-with-block",
          "ignore-without-block", "ignore-malformed", "marker-malformed", "agents-not-utf8", "vivary-a-file",
          "notes-tree", "code-tree", "nested-negation", "foreign-config", "stale-adapter",
          "user-adapter", "own-state", "agents-symlink", "agents-a-folder", "gitignore-a-folder",
          "adopted", "init-0.4.3", "init-0.4.3-active", "through-a-link", "read-only-agents",
          "interrupted", "missing", "a-file")
COMMANDS = (["plan"], ["plan", "--json"], ["apply"], ["apply", "--json"],
            ["apply", "--adapter", "claude"], ["plan", "--adapter", "claude", "--adapter", "agents", "--json"],
            ["apply", "--preset", "second-brain", "--json"], ["--yes"], ["--yes", "--plan", "sha256:" + "0" * 64],
            ["plan", "--preset", "writing"], ["--recover", "sha256:" + "1" * 64, "--json"])
CASES = [(state, COMMANDS[(i + k) % len(COMMANDS)]) for i, state in enumerate(STATES) for k in (0, 3, 7)]


OURS = "create-vivary"  # ours by its console script's name, run in this process (tests/support/sides.py)


def _adopt(exe: Path | str, ws: Path, command: list[str], ours: bool) -> subprocess.CompletedProcess[str]:
    """Run one command line; ``apply`` first asks the tool for its own plan of that copy."""
    extra = ["--minimal"] if ours else []
    options = [c for c in command if c not in ("plan", "apply")]
    base = ["adopt", str(ws), *extra, *options]
    if command[0] != "apply":
        return run_side(exe, base, ws.parent)
    return run_side(exe, [*base, "--yes", "--plan", str(_planned_hash(exe, ws, command, ours))], ws.parent)


def _normal(text: str, root: Path, plan_hash: str | None) -> Any:
    text = text.replace(str(root), "<ROOT>")
    if plan_hash:
        text = text.replace(plan_hash, "<HASH>")
    try:
        doc = json.loads(text)
    except ValueError:
        return [line for line in text.splitlines() if not line.startswith("  warning: ")]
    if isinstance(doc, dict):
        doc.pop("doctor", None)
    return doc


def _files(base: Path) -> dict[str, bytes | str]:
    return {k: v for k, v in tree(base).items() if ".git" not in k.split("/")}


@pytest.mark.slow  # the slow tier: a parity corpus against create-vivary 0.4.3
@pytest.mark.parametrize(("state", "command"), CASES, ids=[f"{s}-{'_'.join(c)}" for s, c in CASES])
def test_adopt_minimal_matches_create_vivary_0_4_3(
    tmp_path: Path, upstream: Callable[[str], Path], state: str, command: list[str]
) -> None:
    oracle = upstream("create-vivary")
    a, b = tmp_path / "A" / "repo", tmp_path / "B" / "repo"
    txs = {}
    for ws in (a, b):
        ws.parent.mkdir()
        txs[ws] = _build(state, ws, oracle)
    # the same folder, the same hash from either tool (and the same refusal when none)
    my_hash = _planned_hash(OURS, b, command, True)
    assert my_hash == _planned_hash(oracle, b, command, False)
    their_hash = _planned_hash(oracle, a, command, False)
    theirs = _adopt(oracle, a, command, ours=False)
    mine = _adopt(OURS, b, command, ours=True)
    assert [mine.returncode, *(_normal(t.replace(txs[b], "<TX>"), b, my_hash) for t in (mine.stdout, mine.stderr))] \
        == [theirs.returncode, *(_normal(t.replace(txs[a], "<TX>"), a, their_hash) for t in (theirs.stdout, theirs.stderr))]
    assert _interrupted(b.parent, txs[b]) == _interrupted(a.parent, txs[a])
    if command[0] == "apply" and mine.returncode == 0:
        _healthy(b, upstream)


def _planned_hash(exe: Path | str, ws: Path, command: list[str], ours: bool) -> Any:
    options = [c for c in command if c not in ("plan", "apply", "--json", "--yes")]
    proc = run_side(exe, ["adopt", str(ws), *(["--minimal"] if ours else []), *options, "--json"], ws.parent)
    return json.loads(proc.stdout).get("plan_hash")


def _healthy(ws: Path, upstream: Callable[[str], Path]) -> None:
    checks = {
        "our doctor": [OURS, "doctor", str(ws), "--json"],
        "0.4.3 doctor": [upstream("create-vivary"), "doctor", str(ws), "--json"],
        "our tropo check": ["tropo", "check", "--root", str(ws)],
        "the suite's tropo check": [upstream("tropo"), "check", "--root", str(ws)],
    }
    for name, cmd in checks.items():
        proc = run_side(cmd[0], [str(c) for c in cmd[1:]], ws.parent)
        assert proc.returncode == 0, (name, proc.stdout[-2000:], proc.stderr[-2000:])


def test_the_cases_reach_every_outcome() -> None:
    assert len(CASES) >= 50 and {command[0] for _, command in CASES} == {"plan", "apply", "--yes", "--recover"}
    assert {state for state, _ in CASES} == set(STATES)


# An interrupted apply: 0.4.3 stopped after N actions (its own test hooks), or after
# changing .gitignore but before its journal existed. Both copies are interrupted by
# 0.4.3; then each tool plans the recovery, and applies its own recovery plan.
CRASH = """import sys, create_vivary as c
kind, where, plan, adapters = sys.argv[1], sys.argv[2], sys.argv[3], tuple(sys.argv[4:])
try:
    c.adopt_workspace(where, adapters=adapters, yes=True, plan_hash=plan,
                      **({"_crash_before_journal": True} if kind == "pre" else {"_crash_after": int(kind)}))
except KeyboardInterrupt:
    sys.exit(0)
sys.exit(3)
"""
RECOVERIES = [(state, crash, adapters) for state, adapters in (
    ("empty-repo", []), ("own-agents", []), ("ignore-without-block", []), ("agents-no-newline", []),
    ("stale-adapter", ["claude"]), ("plain-folder", ["agents"]))
    for crash in ("pre", "1", "2")]


def _interrupt(oracle: Path, ws: Path, crash: str, adapters: list[str]) -> str:
    options = [a for name in adapters for a in ("--adapter", name)]
    tx = json.loads(run_side(oracle, ["adopt", str(ws), *options, "--json"], ws.parent).stdout)["plan_hash"]
    proc = subprocess.run([str(oracle.parent / "python"), "-I", "-c", CRASH, crash, str(ws), tx, *adapters],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return str(tx)


def _interrupted(base: Path, tx: str) -> dict[str, Any]:
    """The files of an interrupted copy, its plan hash masked and its journal's folder
    identity dropped (with the digest of the marked .gitignore, which holds the hash):
    they bind the copy, not what was written."""
    out: dict[str, Any] = {}
    for rel, data in _files(base).items():
        if isinstance(data, bytes):
            data = data.replace(tx.encode(), b"<TX>")
            if rel.endswith("adopt-journal.json"):
                body = json.loads(data)
                body["approval"].pop("target")
                for action in body["actions"]:
                    action.pop("transient_after_hash")
                data = body
        out[rel] = data
    return out


def _digest_of(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "<none>"


def _recovery_hash(exe: Path | str, ws: Path, tx: str, ours: bool) -> Any:
    proc = run_side(exe, ["adopt", str(ws), *(["--minimal"] if ours else []), "--recover", tx, "--json"], ws.parent)
    return json.loads(proc.stdout).get("recovery_plan_hash")


@pytest.mark.slow  # the slow tier: a parity corpus against create-vivary 0.4.3
@pytest.mark.parametrize(("state", "crash", "adapters"), RECOVERIES)
@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_recovery_matches_create_vivary_0_4_3(
    tmp_path: Path, upstream: Callable[[str], Path], state: str, crash: str, adapters: list[str],
    as_json: list[str],
) -> None:
    oracle = upstream("create-vivary")
    a, b = tmp_path / "A" / "repo", tmp_path / "B" / "repo"
    txs = {}
    for ws in (a, b):
        ws.parent.mkdir()
        _build(state, ws, oracle)
        before = _files(ws.parent)
        txs[ws] = _interrupt(oracle, ws, crash, adapters)
    assert _interrupted(b.parent, txs[b]) == _interrupted(a.parent, txs[a]) and _files(b.parent) != before
    mine_r = _recovery_hash(OURS, b, txs[b], True)
    assert mine_r == _recovery_hash(oracle, b, txs[b], False)
    theirs_r = _recovery_hash(oracle, a, txs[a], False)
    marked = {ws: _digest_of(ws / ".gitignore") for ws in (a, b)}  # it holds the hash too
    for yes in ([], ["--yes", "--plan"]):
        outs = []
        for exe, ws, extra, rhash in ((oracle, a, [], theirs_r), (OURS, b, ["--minimal"], mine_r)):
            proc = run_side(exe, ["adopt", str(ws), *extra, "--recover", txs[ws], *yes, *([rhash] if yes else []),
                              *as_json], ws.parent)
            norm = [_normal(t.replace(txs[ws], "<TX>").replace(marked[ws], "<MARKED>"), ws, rhash)
                    for t in (proc.stdout, proc.stderr)]
            outs.append((proc.returncode, *norm))
        assert outs[1] == outs[0]
    assert _files(b.parent) == _files(a.parent)


def _interrupt_ours(ws: Path) -> str:
    """Our apply of `ws`, stopped where its doctor would run (the journal written, every
    file changed); the plan hash it ran under."""
    stop = ("import sys\nfrom pathlib import Path\nfrom create_vivary import thin_adopt, thin_journal\n"
            "p = thin_adopt.plan(Path(sys.argv[1]), None, ())\n"
            "def stop(root):\n    raise KeyboardInterrupt\n"
            "try:\n    thin_journal.apply(p, p.hash, stop)\nexcept KeyboardInterrupt:\n    print(p.hash)\n")
    proc = subprocess.run([str(BIN / "python"), "-c", stop, str(ws)], capture_output=True, text=True,
                          check=False, timeout=300)
    tx = proc.stdout.strip()
    assert tx.startswith("sha256:"), proc.stderr
    return tx

def test_0_4_3_recovers_what_our_interrupted_apply_left(tmp_path: Path, upstream: Callable[[str], Path]) -> None:
    """Our journal is 0.4.3's: an apply of ours stopped before its doctor ran is taken
    back by 0.4.3's --recover, file for file."""
    oracle = upstream("create-vivary")
    ws = tmp_path / "repo"
    _build("own-agents", ws, oracle)
    (ws / ".gitignore").write_text("dist/\n")
    before = _files(tmp_path)
    tx = _interrupt_ours(ws)
    journal = json.loads((ws / ".vivary/runtime/adopt-journal.json").read_text())
    assert (journal["schema"], journal["phase"], journal["completed"]) == ("vivary.adopt-journal.v3", "applying", 5)
    rhash = json.loads(run_side(oracle, ["adopt", str(ws), "--recover", tx, "--json"], tmp_path).stdout)["recovery_plan_hash"]
    done = run_side(oracle, ["adopt", str(ws), "--recover", tx, "--yes", "--plan", rhash], tmp_path)
    assert done.returncode == 0, done.stderr
    assert _files(tmp_path) == before


@pytest.mark.parametrize("option", [["--project", "x"], ["--ratchet"]])
def test_our_own_adopt_options_are_a_usage_error_with_minimal(tmp_path: Path, option: list[str]) -> None:
    """Deliberate: 0.4.3's adopt has no --project or --ratchet; ours says so (exit 2)
    rather than ignoring them, and changes nothing."""
    ws = tmp_path / "repo"
    _git_init(ws)
    before = _files(tmp_path)
    proc = run_side(OURS, ["adopt", str(ws), "--minimal", *option], tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--minimal" in proc.stderr
    assert _files(tmp_path) == before


def test_a_failed_doctor_takes_every_change_back(tmp_path: Path) -> None:
    """When doctor finds a problem after the writes (planted here: the doctor passed in
    says so), the patched AGENTS.md and .gitignore get their old bytes back and
    nothing created stays, folders included."""
    ws = tmp_path / "repo"
    _build("own-agents", ws, Path("/nonexistent"))
    (ws / ".gitignore").write_text("dist/\n")
    before = _files(tmp_path)
    stop = ("import sys\nfrom pathlib import Path\nfrom create_vivary import thin_adopt, thin_journal\n"
            "from create_vivary.plan import Refused\n"
            "p = thin_adopt.plan(Path(sys.argv[1]), None, ())\n"
            "try:\n    thin_journal.apply(p, p.hash, lambda root: ['a planted finding'])\n"
            "except Refused as exc:\n    print(exc)\n")
    proc = subprocess.run([str(BIN / "python"), "-c", stop, str(ws)], capture_output=True, text=True,
                          check=False, timeout=300)
    assert proc.stdout.strip() == "Doctor failed after apply: a planted finding", proc.stderr
    assert _files(tmp_path) == before


def test_files_are_written_0644(tmp_path: Path) -> None:
    """Deliberate: 0.4.3 leaves its temporary files' 0600 on what it creates."""
    ws = tmp_path / "repo"
    _git_init(ws)
    planned = json.loads(run_side(OURS, ["adopt", str(ws), "--minimal", "--json"], tmp_path).stdout)
    done = run_side(OURS, ["adopt", str(ws), "--minimal", "--yes", "--plan", planned["plan_hash"]],
                tmp_path)
    assert done.returncode == 0, done.stderr
    assert {(ws / rel).stat().st_mode & 0o777 for rel in planned["creates"]} == {0o644}


def test_recover_reads_and_removes_nothing_through_a_planted_vivary_link(
    tmp_path: Path, upstream: Callable[[str], Path]
) -> None:
    """An interrupted apply's `.vivary` moved elsewhere and linked back: --recover refuses
    (exit 1) and the journal it would have read, and the folders it would have removed,
    outside the workspace are left as they were."""
    oracle = upstream("create-vivary")
    ws = tmp_path / "repo"
    _build("own-agents", ws, oracle)
    tx = _interrupt_ours(ws)
    elsewhere = tmp_path / "elsewhere"
    (ws / ".vivary").rename(elsewhere)
    (ws / ".vivary").symlink_to(elsewhere)
    before = _files(elsewhere)
    assert "runtime/adopt-journal.json" in before
    for extra in ([], ["--yes", "--plan", "sha256:" + "0" * 64]):
        done = run_side(OURS, ["adopt", str(ws), "--minimal", "--recover", tx, *extra], tmp_path)
        assert done.returncode == 1 and "no safe adoption journal" in done.stderr, done.stderr
    assert _files(elsewhere) == before
