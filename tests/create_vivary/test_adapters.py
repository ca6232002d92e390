"""``create-vivary adopt --adapter``: the runtime skills projected as create-vivary 0.4.3's
adopt projects them. Generated command lines run side by side with 0.4.3 (the oracle,
``$VIVARY_UPSTREAM``): the same exit code at every step (plan, apply with the plan's hash,
a stale hash, no hash), the same adapter files after it, byte for byte, and the same
``optional_projections`` and adapter conflicts. The rest of what adopt writes is ours
(docs/lifecycle.md); a replaced adapter is taken back by ``--recover``."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from create_vivary import adapters, journal, journal_file, thin
from create_vivary import adopt as adopt_mod
from tests.support.cli import run_json
from tests.support.console import run
from tests.support.sides import run_side, served
from tests.support.trees import tree

SITUATIONS = ("free", "free", "current", "older", "newer", "user-owned", "other-adapter", "dir",
              "symlink")
SELECTIONS = ([], ["claude"], ["agents"], ["claude", "agents"], ["agents", "claude"],
              ["claude", "claude"])
FLOWS = ("dry-run", "apply", "apply", "stale-hash", "no-hash")
# 0.4.3 leaves a thin workspace's context.md unchecked, and so in conflict, whenever its
# workspace.toml conflicts; we name only the file that decides (docs/lifecycle.md).
CONTEXT = ".vivary/context.md"


def _place(root: Path, adapter: str, situation: str) -> None:
    """Put ``situation`` at ``adapter``'s path (``free``: nothing there)."""
    path = root / thin.ADAPTERS[adapter]
    if path.is_file():
        path.unlink()
    if situation == "free":
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    other = "agents" if adapter == "claude" else "claude"
    texts = {"current": thin.adapter_doc(adapter), "older": thin.adapter_doc(adapter, "create-vivary 0.4.1"),
             "newer": thin.adapter_doc(adapter, "create-vivary 0.5.0"),
             "user-owned": "# my own skill\n", "other-adapter": thin.adapter_doc(other)}
    if situation == "dir":
        path.mkdir()
    elif situation == "symlink":
        (root / "elsewhere.txt").write_text("not yours\n")
        path.symlink_to(root / "elsewhere.txt")
    else:
        path.write_text(texts[situation])


def _case(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    selected = rng.choice(SELECTIONS)
    kind = rng.choice(["code", "notes", "thin"])
    declared = rng.choice([sorted(set(selected)), sorted(set(selected)), ["claude"], []])
    return {"seed": seed, "kind": kind, "selected": selected,
            "declared": declared if kind == "thin" else None,
            "places": {a: rng.choice(SITUATIONS) for a in sorted(thin.ADAPTERS)},
            "flow": rng.choice(FLOWS), "json": rng.random() < 0.5}


CASES = [_case(seed) for seed in range(56)]


def _make(root: Path, case: dict[str, Any], suite: Path) -> None:
    """The folder to adopt: code, notes, or a thin workspace 0.4.3's init made (so
    both tools meet the same bytes)."""
    if case["kind"] == "thin":
        argv = ["init", str(root)]
        for adapter in case["declared"]:
            argv += ["--adapter", adapter]
        made = served(suite, argv, Path.cwd())
        assert made.returncode == 0, made.stderr
    else:
        root.mkdir()
        (root / "README.md").write_text("# mine\n")
        for n in range(3):
            name = f"src/m{n}.py" if case["kind"] == "code" else f"notes/n{n}.md"
            (root / name).parent.mkdir(exist_ok=True)
            (root / name).write_text(f"# {n}\n")
    for adapter, situation in case["places"].items():
        if case["kind"] != "thin" or situation != "free" or adapter not in case["declared"]:
            _place(root, adapter, situation)


def _adopt(exe: Path | str, root: Path, case: dict[str, Any], *extra: str
           ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """One tool's adopt of `root`: ours (a console script's name) or 0.4.3's (a path)."""
    argv = ["adopt", str(root), *(a for s in case["selected"] for a in ("--adapter", s)), *extra]
    proc = run_side(exe, argv, Path.cwd())
    doc = json.loads(proc.stdout) if "--json" in extra and proc.stdout.startswith("{") else None
    return proc, doc


def _flow(exe: Path | str, root: Path, case: dict[str, Any]) -> dict[str, Any]:
    """Run the case's steps with one tool: what a person sees and what is left."""
    fmt = ["--json"] if case["json"] else []
    plan_run, plan = _adopt(exe, root, case, "--json")
    seen: dict[str, Any] = {"plan": plan_run.returncode}
    if plan is not None and "optional_projections" in plan:
        seen["projections"] = plan["optional_projections"]
        seen["conflicts"] = [c if c["path"] != adapters.CONFIG else c["path"]  # reason: ours
                             for c in plan["conflicts"] if c["path"] != CONTEXT]
    step = {"dry-run": [*fmt], "apply": ["--yes", "--plan", str((plan or {}).get("plan_hash")), *fmt],
            "stale-hash": ["--yes", "--plan", "sha256:" + "0" * 64, *fmt],
            "no-hash": ["--yes", *fmt]}[case["flow"]]
    run, _ = _adopt(exe, root, case, *step)
    seen["step"] = run.returncode
    seen["adapters"] = {rel: found for rel, found in tree(root).items()
                        if rel.startswith((".claude/skills/vivary", ".agents/skills/vivary"))}
    return seen


@pytest.mark.slow  # the slow tier: a parity corpus against create-vivary 0.4.3
@pytest.mark.parametrize("case", CASES, ids=[f"adapter{c['seed']}" for c in CASES])
def test_adopt_adapter_matches_create_vivary_0_4_3(
    tmp_path: Path, upstream: Callable[[str], Path], case: dict[str, Any]
) -> None:
    suite = upstream("create-vivary")
    theirs_root, ours_root = tmp_path / "theirs" / "ws", tmp_path / "ours" / "ws"
    for root in (theirs_root, ours_root):
        root.parent.mkdir()
        _make(root, case, suite)
    theirs = _flow(suite, theirs_root, case)
    ours = _flow("create-vivary", ours_root, case)
    assert ours == theirs, case


@pytest.mark.slow  # the slow tier: a parity corpus against create-vivary 0.4.3
def test_the_generated_adapter_cases_reach_every_outcome(
    tmp_path: Path, upstream: Callable[[str], Path]
) -> None:
    """Every projection status and conflict is among the cases, and each kind of apply
    meets both a clean plan and a conflicted one (read from 0.4.3's own plans, so the
    generator cannot drift)."""
    suite = upstream("create-vivary")
    statuses, conflicts, steps = set(), set(), set()
    for case in CASES:
        root = tmp_path / f"c{case['seed']}" / "ws"
        root.parent.mkdir()
        _make(root, case, suite)
        proc, plan = _adopt(suite, root, case, "--json")
        statuses |= {p["status"] for p in (plan or {}).get("optional_projections", [])}
        conflicts |= {c["path"] if c["path"] == adapters.CONFIG else c["reason"]
                      for c in (plan or {}).get("conflicts", [])}
        steps.add((case["flow"], proc.returncode))
    assert statuses == {"create", "clean", "replace", "conflict"}
    assert {adapters.CONFIG, "adapter content is user-owned",
            "adapter destination is not a regular file"} <= conflicts
    assert {(flow, rc) for flow in FLOWS for rc in (0, 1)} <= steps


def _stale_workspace(root: Path) -> None:
    made = run("create-vivary", "init", str(root), "--minimal", "--adapter", "claude")
    assert made.returncode == 0, made.stderr
    _place(root, "claude", "older")


def test_a_replaced_adapter_is_put_back_by_recover(tmp_path: Path) -> None:
    """A crash after adopt replaced an older release's adapter: --recover plans putting
    the old bytes back, and applying that plan does so and removes what adopt created."""
    root = tmp_path / "ws"
    _stale_workspace(root)
    before = (root / thin.ADAPTERS["claude"]).read_bytes()
    code, plan = run_json("create-vivary", "adopt", str(root), "--adapter", "claude")
    assert code == 0 and [p["status"] for p in plan["optional_projections"]] == ["replace"]
    p = adopt_mod.plan(root, None, "ws", adapters=("claude",))
    created = [f for f in p.files if f.action == "create"]
    journal.begin(root, p.hash, created, git_init=p.git_init, replaced=p.replaced)
    (root / thin.ADAPTERS["claude"]).write_text(thin.adapter_doc("claude"))  # the crash: half done
    code, dry = run_json("create-vivary", "adopt", str(root), "--recover", p.hash)
    assert code == 0, dry
    rows = {r["path"]: r["operation"] for r in dry["recovery_actions"]}
    assert rows[thin.ADAPTERS["claude"]] == "restore-replaced"
    code, done = run_json("create-vivary", "adopt", str(root), "--recover", p.hash, "--yes",
                          "--plan", str(dry["recovery_plan_hash"]))
    assert code == 0, done
    assert (root / thin.ADAPTERS["claude"]).read_bytes() == before
    assert not (root / journal_file.PATH).exists()


def test_a_planted_replacement_in_the_journal_is_refused(tmp_path: Path) -> None:
    """The journal is a file in the tree: an entry that would "restore" anything but an
    older release's exact adapter at its own path is refused, and nothing changes."""
    root = tmp_path / "ws"
    _stale_workspace(root)
    (root / thin.ADAPTERS["claude"]).write_text(thin.adapter_doc("claude"))
    for entry in ({"path": "README.md", "adapter": "claude", "before": "create-vivary 0.4.1"},
                  {"path": thin.ADAPTERS["claude"], "adapter": "claude", "before": "create-vivary 9.0.0"},
                  {"path": thin.ADAPTERS["claude"], "adapter": "claude", "before": "evil\n# owned"}):
        body = {"schema": journal.SCHEMA, "plan_hash": "sha256:x", "git_init": False, "created": [],
                "replaced": [{**entry, "after_hash": _digest(thin.adapter_doc("claude").encode())}]}
        (root / journal_file.PATH).parent.mkdir(parents=True, exist_ok=True)
        (root / journal_file.PATH).write_text(json.dumps(body))
        snapshot = tree(root)
        code, out = run_json("create-vivary", "adopt", str(root), "--recover", "sha256:x")
        assert code == 1 and "malformed" in str(out["error"]), out
        assert tree(root) == snapshot
    shutil.rmtree(root / ".vivary/runtime")


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_older_release_recognises_only_exact_generated_files() -> None:
    doc = thin.adapter_doc("claude", "create-vivary 0.3.9").encode()
    assert adapters.older_release(doc, "claude") == "create-vivary 0.3.9"
    assert adapters.older_release(doc, "agents") is None  # another adapter's file
    assert adapters.older_release(doc + b"\nmine", "claude") is None
    assert adapters.older_release(thin.adapter_doc("claude").encode(), "claude") is None
    assert adapters.older_release(thin.adapter_doc("claude", "create-vivary 0.4.10").encode(),
                                  "claude") is None
