"""Every example flow of the seed README, run end to end in engine mode with a real
agent subprocess (some of its answers wrong on purpose)."""

from __future__ import annotations

from pathlib import Path

from tests.support.flows import event_types, make_workspace, reply


def test_minimal_retries_a_low_confidence_answer_then_completes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "Classify", "replies": [reply({"label": "pos", "confidence": 0.3}),
                                                 reply({"label": "pos", "confidence": 0.9})]}])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_minimal.stratum.yaml"), {"text": "I love it"}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed"
    assert snap.state["output"] == {"label": "pos", "confidence": 0.9}
    prompts = ws.prompts()
    assert "Classify the sentiment of I love it" in prompts[0]
    assert "Your previous attempt failed: ensure[1] failed: result.confidence > 0.7" in prompts[1]


def test_minimal_fails_after_two_wrong_answers(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "Classify", "replies": [reply({"label": "", "confidence": 0.9}),
                                                 reply({"label": "pos", "confidence": 0.1})]}])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_minimal.stratum.yaml"), {"text": "meh"}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "failed"
    assert "ensure[1] failed" in snap.state["failure"]["reason"]
    assert len(ws.prompts()) == 2


def test_workflow_rejects_output_that_breaks_the_contract(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "Review", "replies": [reply({"summary": 3}), reply({"summary": "fine", "extra": 1}),
                                               reply({"summary": "fine"})]}])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_workflow.stratum.yaml"), {"files": ["a.py", "b.py"]}).snap.run_id
    snap = runs.drive(run_id)
    # attempts default to 2: both contract-breaking answers are used up
    assert snap.state["status"] == "failed"
    assert "breaks contract ReviewResult" in snap.state["failure"]["reason"]
    assert '["a.py","b.py"]' in ws.prompts()[0]


def test_iterate_until_quality_is_reached(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    drafts = [reply({"text": f"v{i}", "quality": q}) for i, q in enumerate([0.5, 0.8, 0.97])]
    ws.agents([{"match": "Improve", "replies": drafts}])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_iterate.stratum.yaml"), {"brief": "essay"}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed"
    assert snap.state["output"] == {"text": "v2", "quality": 0.97}
    audit = runs.audit(run_id)
    iterations = [e["detail"]["iterate"] for e in audit["events"] if e["type"] == "result" and "iterate" in e.get("detail", {})]
    assert iterations == [{"iteration": 1, "max": 5}, {"iteration": 2, "max": 5}]


def test_iterate_stops_on_identical_evidence(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "Improve", "replies": [reply({"text": "same", "quality": 0.5})]}])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_iterate.stratum.yaml"), {"brief": "essay"}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "failed"
    assert "identical evidence" in snap.state["failure"]["reason"]
    assert len(ws.prompts()) == 2


def test_on_fail_routes_to_recovery_and_skips_the_dependent(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([
        {"match": "Generate", "replies": [reply({"ok": False}), reply({"ok": False, "details": 1})]},
        {"match": "Repair", "replies": [reply({"ok": True, "details": "repaired"})]},
        {"match": "Publish", "replies": [reply({"ok": True, "details": "published"})]},
    ])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_on_fail.stratum.yaml"), {"spec": "x"}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed"
    steps = snap.state["scope"]["steps"]
    assert steps["generate"]["status"] == "failed"
    assert steps["verify"]["status"] == "skipped"
    assert steps["recover"]["routed"]["attempt"] == 2
    assert snap.state["output"] == {"ok": True, "details": "published"}


def test_on_fail_target_is_skipped_when_never_routed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([
        {"match": "Generate", "replies": [reply({"ok": True, "details": "code"})]},
        {"match": "Verify", "replies": [reply({"ok": True, "details": "verified"})]},
        {"match": "Publish", "replies": [reply({"ok": True, "details": "published"})]},
    ])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_on_fail.stratum.yaml"), {"spec": "x"}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed"
    assert snap.state["scope"]["steps"]["recover"]["status"] == "skipped"
    assert not any("Repair" in p for p in ws.prompts())


def test_composition_runs_a_subflow(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([
        {"match": "integration tests for shop", "replies": [reply({"all_passed": False}), reply({"all_passed": True})]},
        {"match": "Deploy after test result true", "replies": [reply({"status": "deployed"})]},
    ])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_composition.stratum.yaml"), {"project": "shop"}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed", snap.state.get("failure")
    assert snap.state["output"] == {"status": "deployed"}
    test = snap.state["scope"]["steps"]["test"]
    assert test["output"] == {"all_passed": True}
    assert test["sub"]["steps"]["run_tests"]["attempts"][0]["failure"] == "ensure[0] failed: result.all_passed == true"
    ready_ids = [e.get("stepId") for e in runs.audit(run_id)["events"] if e["type"] == "ready"]
    assert "test/run_tests" in ready_ids


def test_gate_example_waits_then_approve_completes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([{"match": "deliverable", "replies": [reply({"result": "draft", "quality_score": 0.9})]}])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_gate.stratum.yaml"), {"text": "a poem"}).snap.run_id
    snap = runs.drive(run_id)
    assert snap.state["status"] == "running"
    assert snap.state["scope"]["steps"]["review"]["status"] == "waiting_gate"
    snap = runs.gate(run_id, "review", "approve", note="good").snap
    assert snap.state["status"] == "completed"
    assert snap.state["output"] == {"result": "draft", "quality_score": 0.9}


def test_all_constructs_example(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents([
        {"match": "Analyze rust", "replies": [reply({"summary": "fast", "score": 7})]},
        {"match": "Inspect ", "replies": [reply({"value": "seen"})]},
        {"match": "Summarize rust", "replies": [reply({"message": "summary of rust"})]},
        {"match": "Finalize summary of rust", "replies": [reply({"message": "final"})]},
    ])
    runs = ws.runs()
    run_id = runs.plan(ws.spec("readme_all_constructs.stratum.yaml"), {"topic": "rust", "items": ["a", "b", "c"]}).snap.run_id
    snap = runs.drive(run_id)
    steps = snap.state["scope"]["steps"]
    assert steps["normalize"]["output"] == {"summary": "fast", "score": 7}
    assert steps["review"]["status"] == "waiting_gate"
    snap = runs.gate(run_id, "review", "approve").snap
    snap = runs.drive(run_id)
    assert snap.state["status"] == "completed", snap.state.get("failure")
    assert snap.state["scope"]["steps"]["inspect"]["output"] == [{"value": "seen"}] * 3
    assert snap.state["output"] == {"message": "final"}
    assert sorted(p for p in ws.prompts() if p.startswith("Inspect"))[0].startswith("Inspect a")
    assert "fanout_item_done" in event_types(runs.audit(run_id)["events"])
