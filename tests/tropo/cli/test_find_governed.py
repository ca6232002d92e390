"""`tropo find --governed`: a Task Capsule from the graph that strato decide accepts."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from strato.decide.decision import decide
from tests.support import governed as builders
from tests.support.repos import commit_all
from tests.support.vaults import make_vault, tropo
from tropo.governed.capsule import is_intact
from tropo.governed.receipt import js_timestamp


def _capsule(root: Path, *args: str) -> dict:  # type: ignore[type-arg]
    code, out, err = tropo("find", "--governed", *args, cwd=root)
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_capsule_is_intact_and_bounded(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    capsule = _capsule(repo_dir, "who owns the tropo project")
    assert capsule["schema"] == "vivary.task-capsule/v0" and is_intact(capsule)
    subjects = {c["subject"] for c in capsule["claims"]}
    assert "tropo" in subjects
    small = _capsule(repo_dir, "who owns the tropo project", "--max-claims", "2")
    assert len(small["claims"]) == 2 and is_intact(small)
    cut = [o for o in small["omissions"] if o["kind"] == "claims_over_budget"]
    assert cut and cut[0]["omitted_count"] == len(capsule["claims"]) - 2


def test_fingerprint_follows_the_checked_out_tree(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    before = _capsule(repo_dir, "tropo")["workspace"]["fingerprint"]
    assert before == _capsule(repo_dir, "tropo")["workspace"]["fingerprint"]
    (repo_dir / "people" / "jeff.md").write_text("---\nrelationship: friend\n---\n# Jeff\n")
    assert _capsule(repo_dir, "tropo")["workspace"]["fingerprint"] != before


def test_decide_accepts_the_capsule(repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    capsule = _capsule(repo_dir, "tropo project status")
    at = js_timestamp(datetime.now(UTC))
    request = builders.request(capsule, scope={"project": "vault", "paths": capsule["task"]["scope"]},
                               requested_at=at, decision_at=at)
    assert decide(request).document()["decision"] == "act"


def test_ranking_options_do_not_apply(repo_dir: Path) -> None:
    make_vault(repo_dir)
    for extra in (["--budget", "10"], ["--type", "person"], ["--k", "3"]):
        code, _, err = tropo("find", "--governed", "x", *extra, cwd=repo_dir)
        assert code == 2 and "does not apply" in err
    code, _, err = tropo("find", "x", "--max-claims", "3", cwd=repo_dir)
    assert code == 2 and "goes with --governed" in err


def test_upstream_core_accepts_our_capsule(upstream: Callable[[str], Path], repo_dir: Path) -> None:
    make_vault(repo_dir)
    commit_all(repo_dir)
    capsule = _capsule(repo_dir, "tropo")
    python = upstream("python")
    script = ("import json,sys; from vivary_core.capsule_compile import verify_task_capsule_integrity as v; "
              "print(json.dumps(v(json.load(sys.stdin))))")
    proc = subprocess.run([str(python), "-c", script], input=json.dumps(capsule), capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) is True
