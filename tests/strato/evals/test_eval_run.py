"""`strato eval run`: a few of the demo's tasks through the real engine with the weak
agent, its judge and the unittest scorer; results on refs/vivary/evals/<id>, broken tasks
reported while the rest run, a killed run taken up without running finished tasks again,
results that travel with push and clone, and a task set that cannot pick what runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.console import BIN, run
from tests.support.evals import FLOWS, configure, tiny_set
from tests.support.repos import git


@pytest.fixture
def ws(repo_dir: Path, tmp_path: Path) -> Path:
    configure()
    tiny_set(tmp_path / "set")
    return repo_dir


def _eval(ws: Path, *args: str) -> dict:
    proc = run("strato", "eval", "run", ws.parent / "set", *args, "--json", cwd=ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _rows(ws: Path, eval_id: str) -> list[dict]:
    proc = run("strato", "eval", "show", eval_id, "--json", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["rows"]


def test_every_task_gets_one_result_per_trial_on_the_evals_ref(ws: Path) -> None:
    doc = _eval(ws, "--flow", FLOWS / "judged.stratum.yaml", "--agent", "weak", "--repeat", "2", "--id", "j")
    assert (doc["results"], doc["expected"], doc["ref"]) == (6, 6, "refs/vivary/evals/j")
    rows = _rows(ws, "j")
    assert sorted((r["task"], r["trial"]) for r in rows) == [(t, k) for t in ("l01", "n01", "s01") for k in (0, 1)]
    for r in rows:
        assert r["outcome"] in ("success", "failure") and r["runId"], r
        assert r["attempts"] >= 1 and r["verifierCalls"] >= 1 and r["tokens"] > 0 and r["wallMs"] > 0, r
    # one commit per result after the start, each readable as git keeps it
    assert git(ws, "rev-list", "--count", "refs/vivary/evals/j").strip() == "7"
    assert "eval: " in git(ws, "log", "-1", "--format=%s", "refs/vivary/evals/j")
    # the runs themselves live in the eval's scratch repository, not in the workspace,
    # and so do the lanes they earned (lanes on by default)
    assert git(ws, "for-each-ref", "refs/vivary/runs/") == ""
    scratch = ws / ".git" / "vivary" / "evals" / "j" / "work"
    assert len(git(scratch, "for-each-ref", "refs/vivary/runs/").splitlines()) == 6
    assert "refs/vivary/lanes" in git(scratch, "for-each-ref", "refs/vivary/lanes")
    audit = run("strato", "flow", "audit", rows[0]["runId"], "--json", cwd=scratch)
    assert json.loads(audit.stdout)["status"] in ("completed", "failed")


def test_lanes_off_checks_every_output_and_records_no_lanes(ws: Path) -> None:
    _eval(ws, "--flow", FLOWS / "judged.stratum.yaml", "--agent", "weak", "--lanes", "off", "--id", "nl")
    rows = _rows(ws, "nl")
    assert all(r["verifierCalls"] >= 1 for r in rows if r["outcome"] == "success")
    scratch = ws / ".git" / "vivary" / "evals" / "nl" / "work"
    assert git(scratch, "for-each-ref", "refs/vivary/lanes") == ""


def test_the_same_command_again_resumes_and_another_config_under_the_id_is_refused(ws: Path) -> None:
    first = _eval(ws, "--flow", FLOWS / "bare.stratum.yaml", "--agent", "weak")
    again = _eval(ws, "--flow", FLOWS / "bare.stratum.yaml", "--agent", "weak")
    assert first["id"] == again["id"] and again["results"] == 3
    assert git(ws, "rev-list", "--count", f"refs/vivary/evals/{first['id']}").strip() == "4"
    proc = run("strato", "eval", "run", ws.parent / "set", "--flow", FLOWS / "retry.stratum.yaml",
               "--agent", "weak", "--id", first["id"], "--json", cwd=ws)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "eval_mismatch"
    assert "flow" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_a_broken_task_is_reported_and_the_rest_run(ws: Path) -> None:
    tasks = ws.parent / "set" / "tasks"
    (tasks / "zz-bad.md").write_text("---\ntype: task\nfixture: ../../etc\nscorer: ensures\ninput: {}\n---\n")
    (tasks / "zz-evil.md").write_text("---\ntype: task\nfixture: fixture\nscorer: command:evil\ninput: {}\n---\n")
    (tasks / "zz-notask.md").write_text("---\ntype: note\n---\n")
    doc = _eval(ws, "--flow", FLOWS / "bare.stratum.yaml", "--agent", "weak", "--id", "b")
    assert doc["results"] == 6 and doc["outcomes"].get("broken") == 3
    why = {r["task"]: r["reason"] for r in _rows(ws, "b") if r["outcome"] == "broken"}
    assert "not a folder of the set" in why["zz-bad"]
    assert "scorer command 'evil' is not in your own" in why["zz-evil"]
    assert "not a task" in why["zz-notask"]


def test_a_killed_run_is_taken_up_without_running_finished_tasks_again(ws: Path, tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"  # the agent below appends the task of each call
    wrapper = tmp_path / "counting_agent.py"
    wrapper.write_text(
        "import re, runpy, sys, time\n"
        f"open({str(calls)!r}, 'a').write(re.search(r'Task (\\S+)', sys.argv[-1]).group(1) + '\\n')\n"
        "time.sleep(0.5)\n"
        f"sys.argv = [{str(FLOWS.parent / 'agent' / 'demo_weak_agent.py')!r}, '--rate', '0', sys.argv[-1]]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    configure(extra=f'\n[agents.counted]\nargv = [{json.dumps(sys.executable)}, "{wrapper}", "{{prompt}}"]\n')
    argv = [str(BIN / "strato"), "eval", "run", str(ws.parent / "set"), "--flow",
            str(FLOWS / "bare.stratum.yaml"), "--agent", "counted", "--id", "k"]
    proc = subprocess.Popen(argv, cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while git(ws, "rev-list", "--count", "refs/vivary/evals/k", check=False).strip() not in ("2", "3", "4"):
        assert proc.poll() is None, "the eval ended before it could be killed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = {r["task"] for r in _rows(ws, "k")}
    assert 1 <= len(finished) < 3
    before = calls.read_text().split()
    doc = _eval(ws, "--flow", FLOWS / "bare.stratum.yaml", "--agent", "counted", "--id", "k")
    assert doc["results"] == 3 and doc["outcomes"] == {"success": 3}
    rerun = calls.read_text().split()[len(before):]
    assert not set(rerun) & finished and set(rerun) | finished == {"l01", "n01", "s01"}


def test_results_travel_with_push_and_clone(ws: Path, tmp_path: Path) -> None:
    _eval(ws, "--flow", FLOWS / "bare.stratum.yaml", "--agent", "weak", "--id", "one")
    _eval(ws, "--flow", FLOWS / "judged.stratum.yaml", "--agent", "weak", "--id", "two")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(ws, "push", "-q", str(remote), "refs/vivary/evals/*:refs/vivary/evals/*")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/vivary/evals/*:refs/vivary/evals/*")
    assert _rows(clone, "one") == _rows(ws, "one")
    proc = run("strato", "eval", "compare", "one", "two", "--json", cwd=clone)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["pairedTasks"] == 3


def test_the_task_set_cannot_choose_what_runs(ws: Path, tmp_path: Path) -> None:
    """The adversary writes the task set and its fixture: an agents.toml, an evals.toml
    and a judge of its own, all of which would leave a marker if they ran."""
    marker = tmp_path / "pwned"
    evil = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('x')", "{prompt}"]
    planted = ws.parent / "set" / "fixture" / ".vivary"
    planted.mkdir()
    (planted / "agents.toml").write_text(f"[agents.weak]\nargv = {json.dumps(evil)}\n[judge]\nargv = {json.dumps(evil)}\n")
    (planted / "evals.toml").write_text(f"[scorers.unittest]\nargv = {json.dumps(evil[:3])}\n")
    (ws.parent / "set" / "tasks" / "s01.md").write_text(
        (ws.parent / "set" / "tasks" / "s01.md").read_text().replace("command:unittest", "command:evil"))
    doc = _eval(ws, "--flow", FLOWS / "judged.stratum.yaml", "--agent", "weak", "--id", "adv")
    assert not marker.exists()
    assert doc["outcomes"].get("broken") == 1 and doc["results"] == 3


def test_a_fixture_can_be_a_folder_of_a_commit(ws: Path) -> None:
    """`git:REV:PATH` reads the fixture from a commit of the set's repository, as that
    commit has it: a later edit of the working tree changes nothing."""
    configure(rate=0.0)  # an agent that never errs: only the fixture decides
    set_dir = ws.parent / "set"
    git(set_dir.parent, "init", "-q", str(set_dir))
    git(set_dir, "add", "-A")
    git(set_dir, "commit", "-q", "-m", "set")
    git(set_dir, "tag", "v1")
    task = set_dir / "tasks" / "s01.md"
    task.write_text(task.read_text().replace("fixture: [fixture,", "fixture: [\"git:v1:fixture\","))
    (set_dir / "fixture" / "textkit" / "strings.py").write_text("this is not python\n")
    doc = _eval(ws, "--flow", FLOWS / "bare.stratum.yaml", "--agent", "weak", "--id", "g")
    rows = {r["task"]: r for r in _rows(ws, "g")}
    assert rows["s01"]["outcome"] == "success", rows["s01"]
    assert rows["n01"]["outcome"] == "failure" and doc["results"] == 3  # their fixture is the edited folder
    task.write_text(task.read_text().replace("git:v1:fixture", "git:nosuch:fixture"))
    _eval(ws, "--flow", FLOWS / "bare.stratum.yaml", "--agent", "weak", "--id", "g2")
    assert "git:REV:PATH" in str({r["task"]: r for r in _rows(ws, "g2")}["s01"]["reason"])


@pytest.mark.parametrize(("args", "code", "exit_code"), [
    (["--flow", "FLOWS/bare.stratum.yaml", "--agent", "nobody"], "config_error", 2),
    (["--flow", "FLOWS/missing.stratum.yaml", "--agent", "weak"], "invalid_flow", 2),
    (["--flow", "SET/tasks/s01.md", "--agent", "weak"], "invalid_flow", 2),
    (["--flow", "FLOWS/bare.stratum.yaml", "--agent", "weak", "--id", "../x"], "usage", 2),
])
def test_bad_input_is_one_line_and_writes_nothing(ws: Path, args: list[str], code: str, exit_code: int) -> None:
    argv = [a.replace("FLOWS", str(FLOWS)).replace("SET", str(ws.parent / "set")) for a in args]
    proc = run("strato", "eval", "run", ws.parent / "set", *argv, "--json", cwd=ws)
    assert proc.returncode == exit_code and json.loads(proc.stdout)["error"]["code"] == code, proc.stdout
    assert len(proc.stderr.splitlines()) == 1
    assert git(ws, "for-each-ref", "refs/vivary/") == "" and not (ws / ".git" / "vivary" / "evals").exists()


def test_a_folder_with_no_tasks_is_a_usage_error(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = run("strato", "eval", "run", tmp_path / "empty", "--flow", FLOWS / "bare.stratum.yaml",
               "--agent", "weak", "--json", cwd=ws)
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["code"] == "invalid_task_set"


def test_ensures_and_judge_scorers(ws: Path) -> None:
    """`ensures`: the run completed; `judge`: the trusted judge (here the demo's, which
    runs the tests) says the task's statement holds."""
    configure(rate=0.0)
    tasks = ws.parent / "set" / "tasks"
    for name, scorer in (("s01", "scorer: ensures"), ("n01", "scorer: judge\nstatement: the tests pass")):
        task = tasks / f"{name}.md"
        task.write_text(task.read_text().replace("scorer: command:unittest", scorer))
    _eval(ws, "--flow", FLOWS / "bare.stratum.yaml", "--agent", "weak", "--id", "sc")
    rows = {r["task"]: r for r in _rows(ws, "sc")}
    assert rows["s01"]["reason"] == "the run completed: its ensures held" and rows["s01"]["score"] == 1
    assert rows["n01"]["reason"].startswith("judge: ") and "tests pass" in rows["n01"]["reason"]
    assert rows["n01"]["score"] == 1 and rows["l01"]["reason"] == "scorer unittest passed"


def test_a_flow_that_waits_at_a_gate_is_an_error_per_task_not_a_hang(ws: Path, tmp_path: Path) -> None:
    configure(rate=0.0)  # every edit reaches the gate
    flow = tmp_path / "gated.stratum.yaml"
    flow.write_text((FLOWS / "bare.stratum.yaml").read_text() + (
        "      - id: review\n        after: [edit]\n        gate: {on_approve: null, on_revise: null, on_kill: null}\n"))
    doc = _eval(ws, "--flow", flow, "--agent", "weak", "--id", "gated")
    assert doc["outcomes"] == {"error": 3}
    assert {r["reason"] for r in _rows(ws, "gated")} == {"the run waits at a gate: an eval flow must run unattended"}
