"""The Evals view of docs/workbench.md: its read-only API against a real `vivary serve`
over evals on refs/vivary/evals/<id> (the list, one eval's results with where each run
lives, a comparison and its refusals, the same guards as every route, a malformed eval
said rather than crashing the list), and in real Chromium a real `strato eval run` of a
tiny task set with the weak demo agent: listed, compared in the page with its flipped
tasks, a result opened down to its run's attempts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strato.evals import store
from tests.support.browser import Watched
from tests.support.console import run
from tests.support.evals import FLOWS, configure, record_eval, tiny_set
from tests.support.repos import git
from tests.support.serving import serving
from tropo.git import chain
from tropo.git.repo import require

SCORES_A = {"t0": 1.0, "t1": 1.0, "t2": 0.0, "t3": 0.0}
SCORES_B = {"t0": 1.0, "t1": 0.0, "t2": 1.0, "t3": 1.0}


def _forge_unreadable(root: Path, eval_id: str) -> None:
    """An eval ref whose results.json is not JSON (anyone who can push a ref can make one)."""
    record_eval(root, eval_id, "bare", {"t0": 1.0})
    repo = require(root)
    config = chain.encode(store.load(repo, eval_id)[0])
    chain.update(repo, store.ref(eval_id),
                 lambda tip: (chain.Append({store.CONFIG: config, store.RESULTS: b"{not json"}, "forged"), None),
                 "forged")


def test_the_api_lists_shows_and_compares_evals_read_only(repo_dir: Path) -> None:
    record_eval(repo_dir, "bare", "bare", SCORES_A, tokens=100)
    record_eval(repo_dir, "judged", "judged", SCORES_B, tokens=300)
    record_eval(repo_dir, "other", "bare", {"t0": 1.0, "x9": 0.0}, set_name="other")
    _forge_unreadable(repo_dir, "broken")
    with serving("--root", str(repo_dir)) as server:
        listed = {e["id"]: e for e in server.get("/api/evals").json()["evals"]}
        assert set(listed) == {"bare", "judged", "other", "broken"}
        judged = listed["judged"]
        assert (judged["set"], judged["flow"], judged["agent"], judged["lanes"], judged["repeat"]) == (
            "s", "judged", "weak", True, 1)
        assert (judged["successRate"], judged["tokensPerTask"], judged["results"]) == (0.75, 300, 4)
        assert isinstance(judged["movedAt"], int)
        assert "cannot be read" in listed["broken"]["problem"]  # said, and the others still listed

        one = server.get("/api/evals/bare").json()
        assert [(r["task"], r["score"], r["outcome"]) for r in one["rows"]] == [
            ("t0", 1.0, "success"), ("t1", 1.0, "success"), ("t2", 0.0, "failure"), ("t3", 0.0, "failure")]
        assert one["ref"] == "refs/vivary/evals/bare" and one["results"] == one["expected"] == 4
        work = repo_dir / ".git" / "vivary" / "evals" / "bare" / "work"
        assert one["scratch"] == {"path": str(work), "present": False}  # made by no eval run here
        assert one["rows"][0]["audit"] == f"strato flow audit t0-0-abc123 --root {work}"
        gone = server.get("/api/evals/bare/runs/t0-0-abc123")
        assert gone.status == 404 and gone.json()["code"] == "run_not_here"
        assert "strato flow audit" in gone.json()["error"]

        c = server.get("/api/evals/bare/compare/judged").json()
        assert c["difference"]["successRate"] == 0.25 and len(c["difference"]["ci"]) == 2
        assert {(f["task"], f["to"]) for f in c["flipped"]} == {("t1", "fail"), ("t2", "pass"), ("t3", "pass")}
        assert (c["a"]["tokensPerTask"], c["b"]["tokensPerTask"]) == (100, 300)
        cli = json.loads(run("strato", "eval", "compare", "bare", "judged", "--json", cwd=repo_dir).stdout)
        assert c == cli  # the same comparison the terminal gives

        for path, status, code in (
            ("/api/evals/bare/compare/other", 409, "different_task_sets"),
            ("/api/evals/nope", 404, "eval_not_found"),
            ("/api/evals/nope/compare/bare", 404, "eval_not_found"),
            ("/api/evals/broken", 409, "unreadable_eval"),
            ("/api/evals/..%2f..%2fetc/runs/x", 404, "not_found"),  # no route takes a path
            ("/api/evals/..hidden/runs/x", 404, "eval_not_found"),  # not an eval id: no folder named
            ("/api/evals/bare/runs/..", 404, "run_not_here"),
        ):
            answer = server.get(path)
            assert (answer.status, answer.json()["code"]) == (status, code), path
            assert answer.json()["ok"] is False and answer.json()["error"]
        assert "only in B: x9" in server.get("/api/evals/bare/compare/other").json()["error"]
        # the guards of every route: no token, another host, a write
        assert server.request("GET", "/api/evals").status == 401
        assert server.request("GET", "/api/evals", auth=True, host="evil.example").status == 403
        assert server.post("/api/evals/bare", {}).status == 405
    assert git(repo_dir, "for-each-ref", "refs/vivary/runs/") == ""  # nothing written by reading


@pytest.mark.slow  # a browser test, and two real eval runs
def test_the_evals_view_lists_a_real_eval_compares_two_and_opens_a_results_run(
        watched: Watched, repo_dir: Path, tmp_path: Path) -> None:
    configure(rate=1.0, feedback_rate=0.0)  # every first try wrong, every retry with its failure right
    tiny_set(tmp_path / "set", ("s01", "n01"))
    for flow in ("bare", "judged"):
        proc = run("strato", "eval", "run", tmp_path / "set", "--flow", FLOWS / f"{flow}.stratum.yaml",
                   "--agent", "weak", "--lanes", "off", "--id", flow, "--json", cwd=repo_dir)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    judged_rows = store.load(require(repo_dir), "judged")[1]
    with serving("--root", str(repo_dir)) as server:
        page = watched.page
        page.goto(server.url + "#/evals")
        row = page.locator("tr[data-eval=judged]")
        row.wait_for()
        cells = row.locator("td").all_inner_texts()
        assert cells[:7] == ["judged", "set", "judged.stratum.yaml", "weak", "off", "1", "100.0% (2/2)"]
        assert page.locator("tr[data-eval=bare] td").nth(6).inner_text() == "0.0% (2/2)"
        watched.shot("evals")
        page.locator("select[name=a]").select_option("bare")
        page.locator("select[name=b]").select_option("judged")
        page.locator("form.inline button").click()
        page.locator("tr[data-flipped=s01]").wait_for()
        assert page.locator("p.difference").inner_text().startswith("B − A success rate +100.0%, 95% CI +100.0% .. +100.0%")
        assert sorted(page.locator("tr[data-flipped]").evaluate_all("rs => rs.map(r => r.dataset.flipped)")) == [
            "n01", "s01"]
        assert "to pass" in page.locator("tr[data-flipped=n01]").inner_text()
        watched.shot("evals-compare")
        page.locator("main a", has_text="judged").first.click()
        result = page.locator("tr[data-task=s01]")
        result.wait_for()
        assert page.locator("[data-scratch=here]").count() == 1
        assert "success rate 100.0% over 2/2 results" in page.locator("main").inner_text()
        watched.shot("eval")
        run_id = next(r["runId"] for r in judged_rows if r["task"] == "s01")
        assert result.locator("a").inner_text() == run_id
        assert result.locator("a").get_attribute("title").startswith(f"strato flow audit {run_id} --root ")
        result.locator("a").click()
        page.wait_for_selector("text=Steps and attempts")
        shown = page.locator("main").inner_text()
        assert run_id in shown and "failed" in shown and "succeeded" in shown  # the wrong try, then the retry
        assert page.locator("main [data-gate]").count() == 0
        # the agent's config changed since: the run's spec no longer loads here, so the page
        # says why and gives the command that shows the run's attempts
        configure(rate=1.0, feedback_rate=0.0, extra="", agent_name="other")
        page.reload()
        page.locator("[data-audit] code").wait_for()
        assert page.locator("[data-audit] code").inner_text().startswith(f"strato flow audit {run_id} --root ")
        assert "unknown agent 'weak'" in page.locator("main .unavailable").inner_text()
    assert watched.errors == ["Failed to load resource: the server responded with a status of 409 (Conflict)"]
