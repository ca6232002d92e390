"""Dispatches: each hand-out has a dispatchId, a generation and two digests; usage is
debited once per dispatchId whoever reports it (a `done` result, a usage report, the
engine itself), recorded as `usage_debit` with a rising `seq`; telemetry is checked
and kept; a result for an earlier hand-out is refused by its generation and digests
as well as by its token. Real repositories, the real `strato` CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strato.mcp.contract import event_violations
from strato.runs.dispatch.fanout import record_dispatch, record_item
from strato.runs.engine.dispatches import engine_telemetry, telemetry_errors
from strato.runs.engine.state import Refused
from strato.runs.service import Runs
from tests.support.flows import DISPATCH_SPEC, make_workspace, planned, ready_entry, reply

CONSUMER = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {xs: "integer[]"}
    output: {from: "${total.output}", contract: R}
    steps:
      - id: each
        fanout:
          over: "${input.xs}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "Count ${item}"
              out: R
      - id: total
        after: [each]
        set: {n: "len(result.each)"}
        out: R
"""


def _events(runs: Runs, kind: str) -> list[dict[str, Any]]:
    """The run's events of one kind; `usage_debit` ones are checked against the
    reference's payload (no undeclared key, every type right) on the way."""
    found = [ev for ev in runs.audit("r1")["events"] if ev["type"] == kind]
    for ev in found if kind == "usage_debit" else []:
        assert event_violations(ev) == [], ev
    return found


def test_a_ready_entry_carries_its_dispatch_generation_and_digests(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path)
    first = ready_entry(runs)
    assert first["generation"] == 1
    assert first["dispatchId"] != first["dispatchToken"]
    assert first["contractDigest"].startswith("sha256:") and first["revisionDigest"].startswith("sha256:")
    # a rejected result hands the step out again: same contract, a new generation
    runs.done("r1", "a", first["dispatchToken"], {"output": {"n": 0}})
    second = ready_entry(runs)
    assert second["generation"] == 2 and second["attempt"] == 2
    assert second["dispatchId"] != first["dispatchId"]
    assert second["contractDigest"] == first["contractDigest"]
    assert second["revisionDigest"] != first["revisionDigest"]
    runs.done("r1", "a", second["dispatchToken"], {"output": {"n": 1}})
    # another step has another contract
    assert ready_entry(runs, "b")["contractDigest"] != first["contractDigest"]
    assert ready_entry(runs, "b")["generation"] == 1


def test_a_second_run_of_the_same_spec_has_the_same_contract_and_another_revision(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path)
    runs.plan(DISPATCH_SPEC, {}, "r2")
    one = ready_entry(runs)
    two = next(e for e in runs.engine(runs.load("r2")).ready() if e["id"] == "a")
    assert one["contractDigest"] == two["contractDigest"]
    assert one["revisionDigest"] != two["revisionDigest"]


@pytest.mark.parametrize(
    ("claim", "code"),
    [
        ({"generation": 1}, "stale_generation"),
        ({"generation": True}, "stale_generation"),
        ({"contractDigest": "sha256:" + "0" * 64}, "contract_mismatch"),
        ({"revisionDigest": "FIRST"}, "stale_revision"),
        ({"dispatchId": "FIRST"}, "stale_dispatch"),
    ],
)
def test_a_result_claiming_an_earlier_hand_out_is_refused_even_with_the_current_token(
    tmp_path: Path, claim: dict[str, Any], code: str
) -> None:
    _ws, runs = planned(tmp_path)
    first = ready_entry(runs)
    runs.done("r1", "a", first["dispatchToken"], {"output": {"n": 0}})
    current = ready_entry(runs)
    claim = {k: (first[k] if v == "FIRST" else v) for k, v in claim.items()}
    head = runs.load("r1").head
    with pytest.raises(Refused) as refused:
        runs.done("r1", "a", current["dispatchToken"], {"output": {"n": 5}}, claim)
    assert refused.value.code == code
    assert runs.load("r1").head == head  # nothing recorded
    # the current hand-out's own claims are accepted
    mine = {k: current[k] for k in ("dispatchId", "generation", "contractDigest", "revisionDigest")}
    runs.done("r1", "a", current["dispatchToken"], {"output": {"n": 5}}, mine)
    assert runs.load("r1").state["scope"]["steps"]["a"]["status"] == "succeeded"


def test_a_stale_token_with_the_current_digests_is_still_refused(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path)
    first = ready_entry(runs)
    runs.done("r1", "a", first["dispatchToken"], {"output": {"n": 0}})
    current = ready_entry(runs)
    mine = {k: current[k] for k in ("generation", "contractDigest", "revisionDigest")}
    with pytest.raises(Refused) as refused:
        runs.done("r1", "a", first["dispatchToken"], {"output": {"n": 5}}, mine)
    assert refused.value.code == "stale_token"


def test_usage_is_debited_once_per_dispatch_and_each_debit_has_the_next_seq(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path)
    first = ready_entry(runs)
    telemetry = {"durationMs": 1500, "model": "gpt-5-codex", "effort": "high"}
    runs.usage_report("r1", first["dispatchId"], {"usd": 0.25, "tokens": 100}, telemetry)
    head = runs.load("r1").head
    for _ in range(3):  # repeats: nothing moves, not even the ref
        assert runs.usage_report("r1", first["dispatchId"], {"usd": 0.25, "tokens": 100}).events == []
    assert runs.load("r1").head == head
    # the result's own usage for the same dispatch is not debited again
    runs.done("r1", "a", first["dispatchToken"], {"output": {"n": 0}, "usage": {"usd": 0.25, "tokens": 100}})
    second = ready_entry(runs)
    runs.done("r1", "a", second["dispatchToken"], {"output": {"n": 2}, "usage": {"usd": 0.5}})
    b = ready_entry(runs, "b")
    runs.usage_report("r1", b["dispatchId"], {"usd": 0.125})
    spent = runs.load("r1").state["flowSpent"]
    assert spent["usd"] == 0.875 and spent["tokens"] == 100 and spent["dispatches"] == 3
    debits = _events(runs, "usage_debit")
    assert [d["detail"]["seq"] for d in debits] == [1, 2, 3]
    assert [d["detail"]["dispatchId"] for d in debits] == [
        first["dispatchId"],
        second["dispatchId"],
        b["dispatchId"],
    ]
    assert [d["detail"]["source"] for d in debits] == ["usage_report", "step_done", "usage_report"]
    one = debits[0]
    assert one["stepId"] == "a"
    assert one["detail"]["amount"] == {"usd": 0.25, "tokens": 100}
    assert (one["detail"]["model"], one["detail"]["effort"], one["detail"]["durationMs"]) == (
        "gpt-5-codex",
        "high",
        1500,
    )
    assert one["detail"]["attempt"] == 1 and one["detail"]["epoch"] == 0
    # the step's own ledger counted each dispatch once too
    assert runs.load("r1").state["scope"]["steps"]["a"]["spent"]["usd"] == 0.75


def test_telemetry_of_a_result_is_kept_in_its_attempt_and_its_debit(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path)
    entry = ready_entry(runs)
    telemetry = {"durationMs": 42.5, "model": "claude-opus"}
    runs.done("r1", "a", entry["dispatchToken"], {"output": {"n": 1}, "telemetry": telemetry})
    state = runs.load("r1").state
    attempt = state["scope"]["steps"]["a"]["attempts"][-1]
    assert attempt["telemetry"] == telemetry and attempt["dispatchId"] == entry["dispatchId"]
    assert state["dispatches"][entry["dispatchId"]] == {
        "stepId": "a",
        "attempt": 1,
        "epoch": 0,
        "generation": 1,
    }
    assert _events(runs, "usage_debit") == []  # no usage reported: nothing debited yet
    # the usage may follow the result; it is debited then, once
    runs.usage_report("r1", entry["dispatchId"], {"usd": 0.1}, {"durationMs": 42.5, "model": "claude-opus"})
    runs.usage_report("r1", entry["dispatchId"], {"usd": 0.1})
    assert runs.load("r1").state["flowSpent"]["usd"] == 0.1
    # once debited, the table keeps only what makes a repeat a no-op
    assert runs.load("r1").state["dispatches"][entry["dispatchId"]] == {"debitSeq": 1}


BAD_TELEMETRY = [
    "not an object",
    {"model": "m"},  # durationMs is required
    {"durationMs": 1},  # model is required
    {"durationMs": -1, "model": "m"},
    {"durationMs": True, "model": "m"},
    {"durationMs": "5", "model": "m"},
    {"durationMs": 10**11, "model": "m"},
    {"durationMs": 1, "model": ""},
    {"durationMs": 1, "model": "m" * 201},
    {"durationMs": 1, "model": "line\nbreak"},
    {"durationMs": 1, "model": 7},
    {"durationMs": 1, "model": "m", "effort": "e" * 65},
    {"durationMs": 1, "model": "m", "effort": ""},
    {"durationMs": 1, "model": "m", "cost": 3},
]


@pytest.mark.parametrize("telemetry", BAD_TELEMETRY)
def test_bad_telemetry_is_refused_and_nothing_is_recorded(tmp_path: Path, telemetry: Any) -> None:
    _ws, runs = planned(tmp_path)
    entry = ready_entry(runs)
    head = runs.load("r1").head
    with pytest.raises(Refused) as refused:
        runs.done(
            "r1",
            "a",
            entry["dispatchToken"],
            {"output": {"n": 1}, "usage": {"usd": 1}, "telemetry": telemetry},
        )
    assert refused.value.code == "invalid_telemetry"
    with pytest.raises(Refused) as refused:
        runs.usage_report("r1", entry["dispatchId"], {"usd": 1}, telemetry)
    assert refused.value.code == "invalid_telemetry"
    assert runs.load("r1").head == head
    # the dispatch was not used up by the refused reports
    assert runs.usage_report("r1", entry["dispatchId"], {"usd": 0.5}).events[0]["detail"]["seq"] == 1


@pytest.mark.parametrize(
    "usage",
    ["x", {"usd": -1}, {"usd": float("nan")}, {"usd": True}, {"coins": 1}, {"dispatches": 1}],
)
def test_a_malformed_usage_report_is_refused_and_nothing_is_recorded(tmp_path: Path, usage: Any) -> None:
    _ws, runs = planned(tmp_path)
    entry = ready_entry(runs)
    head = runs.load("r1").head
    with pytest.raises(Refused) as refused:
        runs.usage_report("r1", entry["dispatchId"], usage)
    assert refused.value.code == "invalid_usage"
    assert runs.load("r1").head == head


def test_a_usage_report_for_a_dispatch_the_run_never_made_is_refused(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path)
    runs.plan(DISPATCH_SPEC, {}, "r2")
    other = next(e for e in runs.engine(runs.load("r2")).ready() if e["id"] == "a")
    for dispatch_id in (other["dispatchId"], ready_entry(runs)["dispatchToken"], "", "../x"):
        with pytest.raises(Refused) as refused:
            runs.usage_report("r1", dispatch_id, {"usd": 1})
        assert refused.value.code == "unknown_dispatch"


def test_usage_that_overspends_the_flow_budget_ends_the_run_and_later_reports_still_count(
    tmp_path: Path,
) -> None:
    _ws, runs = planned(tmp_path)
    entry = ready_entry(runs)
    runs.usage_report("r1", entry["dispatchId"], {"usd": 1.5})
    state = runs.load("r1").state
    assert state["status"] == "budget_exhausted"
    assert state["failure"]["reason"] == "flow budget exhausted (usd)"
    with pytest.raises(Refused):  # its result can no longer be accepted
        runs.done("r1", "a", entry["dispatchToken"], {"output": {"n": 1}})
    # spend reported after the end is real spend: recorded, once
    runs.plan(DISPATCH_SPEC, {}, "r2")
    entry2 = next(e for e in runs.engine(runs.load("r2")).ready() if e["id"] == "a")
    runs.cancel("r2", "stop")
    runs.usage_report("r2", entry2["dispatchId"], {"usd": 0.3})
    runs.usage_report("r2", entry2["dispatchId"], {"usd": 0.3})
    state2 = runs.load("r2").state
    assert state2["status"] == "cancelled" and state2["flowSpent"]["usd"] == 0.3


def test_a_revert_hands_live_steps_out_again_and_the_superseded_dispatch_may_still_report(
    tmp_path: Path,
) -> None:
    _ws, runs = planned(tmp_path)
    before = ready_entry(runs)
    runs.commit("r1", "cp")
    runs.revert("r1", "cp")
    after = ready_entry(runs)
    assert after["generation"] == before["generation"] + 1
    assert after["dispatchId"] != before["dispatchId"] and after["revisionDigest"] != before["revisionDigest"]
    with pytest.raises(Refused) as refused:
        runs.done(
            "r1", "a", after["dispatchToken"], {"output": {"n": 1}}, {"generation": before["generation"]}
        )
    assert refused.value.code == "stale_generation"
    # the agent that held the first hand-out spent money: its report is debited
    runs.usage_report("r1", before["dispatchId"], {"usd": 0.2})
    runs.done("r1", "a", after["dispatchToken"], {"output": {"n": 1}, "usage": {"usd": 0.3}})
    assert runs.load("r1").state["flowSpent"]["usd"] == 0.5
    assert [d["detail"]["seq"] for d in _events(runs, "usage_debit")] == [1, 2]


def test_consumer_items_are_dispatches_with_item_generations(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path, CONSUMER, {"xs": [1, 2]})
    items = {e["id"]: e for e in runs.engine(runs.load("r1")).ready()}
    one = items["each/0"]
    assert one["generation"] == 1 and one["itemIndex"] == 0
    assert one["contractDigest"] == items["each/1"]["contractDigest"]  # one stage, one contract
    assert one["revisionDigest"] != items["each/1"]["revisionDigest"]
    runs.usage_report("r1", one["dispatchId"], {"tokens": 10}, {"durationMs": 3, "model": "m"})
    runs.done("r1", "each/0", one["dispatchToken"], {"output": {"n": "bad"}, "usage": {"tokens": 10}})
    again = {e["id"]: e for e in runs.engine(runs.load("r1")).ready()}["each/0"]
    assert again["generation"] == 2
    with pytest.raises(Refused) as refused:
        runs.done(
            "r1",
            "each/0",
            again["dispatchToken"],
            {"output": {"n": 1}},
            {"revisionDigest": one["revisionDigest"]},
        )
    assert refused.value.code == "stale_revision"
    runs.done("r1", "each/0", again["dispatchToken"], {"output": {"n": 1}, "usage": {"tokens": 5}})
    (debit_one, debit_two) = _events(runs, "usage_debit")
    assert debit_one["stepId"] == "each"
    assert debit_one["detail"]["item"] == {"itemIndex": 0, "stage": 0, "generation": 1}
    assert debit_two["detail"]["item"] == {"itemIndex": 0, "stage": 0, "generation": 2}
    assert runs.load("r1").state["flowSpent"]["tokens"] == 15


def costly(n: int, usd: float) -> dict[str, Any]:
    return reply({"type": "result", "result": json.dumps({"n": n}), "total_cost_usd": usd, "usage": {}})


def test_engine_mode_debits_each_agent_call_once_with_its_measured_time(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    ws.agents(
        [
            {"match": "step a", "replies": [costly(0, 0.1), costly(3, 0.2)]},
            {"match": "step b", "replies": [costly(4, 0.3)]},
        ]
    )
    spec = tmp_path / "s.yaml"
    spec.write_text(DISPATCH_SPEC)
    code, view = ws.strato_json("run", str(spec), "--id", "r1")
    assert code == 0, view
    runs = ws.runs()
    debits = _events(runs, "usage_debit")
    assert [(d["stepId"], d["detail"]["source"], d["detail"]["model"]) for d in debits] == [
        ("a", "engine", "claude"),
        ("a", "engine", "claude"),
        ("b", "engine", "claude"),
    ]
    assert [d["detail"]["seq"] for d in debits] == [1, 2, 3]
    assert len({d["detail"]["dispatchId"] for d in debits}) == 3
    assert all(d["detail"]["durationMs"] == d["detail"]["amount"]["ms"] > 0 for d in debits)
    state = runs.load("r1").state
    assert state["flowSpent"]["usd"] == pytest.approx(0.6)
    assert state["flowSpent"]["ms"] == sum(d["detail"]["amount"]["ms"] for d in debits)


def test_the_cli_reports_usage_once_and_refuses_bad_reports(tmp_path: Path) -> None:
    ws, runs = planned(tmp_path)
    entry = ready_entry(runs)
    args = ("flow", "usage", "r1", entry["dispatchId"], "--usage", '{"usd": 0.5}')
    code, first = ws.strato_json(*args, "--telemetry", '{"durationMs": 7, "model": "m"}')
    assert code == 0 and first["status"] == "debited" and first["seq"] == 1
    assert first["ledger"] == {"spent": {"dispatches": 1, "usd": 0.5}, "budget": {"usd": 1.0}}
    code, again = ws.strato_json(*args)
    assert code == 0 and again["status"] == "duplicate" and again["seq"] == 1
    assert again["ledger"]["spent"]["usd"] == 0.5
    human = ws.strato(*args)
    assert human.returncode == 0 and human.stdout.startswith(f"duplicate {entry['dispatchId']} as seq 1")
    for bad, code_wanted, what in (
        (("--usage", "{"), 2, "not JSON"),
        (("--usage", '{"usd": -1}'), 2, "usage.usd"),
        (("--usage", "{}", "--telemetry", '{"model": "m"}'), 2, "telemetry.durationMs"),
    ):
        proc = ws.strato("flow", "usage", "r1", entry["dispatchId"], *bad)
        assert proc.returncode == code_wanted, proc.stderr
        assert what in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    code, unknown = ws.strato_json("flow", "usage", "r1", "no-such-dispatch", "--usage", "{}")
    assert code == 1 and unknown["error"]["code"] == "unknown_dispatch"
    # `done` takes the hand-out's claims
    proc = ws.strato(
        "flow",
        "done",
        "r1",
        "a",
        "--token",
        entry["dispatchToken"],
        "--result",
        '{"output": {"n": 1}}',
        "--generation",
        "2",
    )
    assert proc.returncode == 1 and "generation does not match" in proc.stderr
    proc = ws.strato(
        "flow",
        "done",
        "r1",
        "a",
        "--token",
        entry["dispatchToken"],
        "--result",
        '{"output": {"n": 1}}',
        "--generation",
        "1",
        "--contract-digest",
        entry["contractDigest"],
        "--revision-digest",
        entry["revisionDigest"],
    )
    assert proc.returncode == 0, proc.stderr


GATED = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${work.output}", contract: R}
    max_rounds: 3
    steps:
      - id: work
        do: "work"
        out: R
      - id: review
        after: [work]
        gate: {on_approve: null, on_revise: work, on_kill: null, max_rounds: 3}
"""


def test_generations_go_on_across_a_revise_round(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path, GATED)
    first = ready_entry(runs, "work")
    runs.done("r1", "work", first["dispatchToken"], {"output": {"n": 1}})
    runs.gate("r1", "review", "revise", note="again")
    second = ready_entry(runs, "work")
    assert (first["epoch"], second["epoch"]) == (0, 1)
    assert (first["generation"], second["generation"]) == (1, 2)
    assert second["revisionDigest"] != first["revisionDigest"]
    with pytest.raises(Refused) as refused:
        runs.done("r1", "work", second["dispatchToken"], {"output": {"n": 2}}, {"generation": 1})
    assert refused.value.code == "stale_generation"


def test_the_engines_own_telemetry_always_passes_its_checks() -> None:
    for name, ms in (("claude", 5), ("", 0), ("a\x00b\n", -3), ("x" * 500, 10**12)):
        telemetry = engine_telemetry(name, ms)
        assert telemetry_errors(telemetry) == [], (name, telemetry)
    assert engine_telemetry("", 1)["model"] == "unknown"
    assert engine_telemetry("a\x00b", 1)["model"] == "ab"


ENGINE_FANOUT = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  main:
    input: {xs: "integer[]"}
    output: {from: "${total.output}", contract: R}
    steps:
      - id: each
        fanout:
          over: "${input.xs}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Count ${item}"
              out: R
      - id: total
        after: [each]
        set: {n: "len(result.each)"}
        out: R
"""


def test_an_engine_fanout_item_recorded_again_after_a_lost_race_still_debits_its_calls(
    tmp_path: Path,
) -> None:
    _ws, runs = planned(tmp_path, ENGINE_FANOUT, {"xs": [7]})
    call = {
        "dispatchId": "call-1",
        "stage": 0,
        "attempt": 1,
        "usage": {"usd": 0.5, "ms": 9},
        "telemetry": {"durationMs": 9, "model": "claude"},
        "inputs": "sha256:x",
    }
    item = {"index": 0, "item": 7, "status": "succeeded", "output": {"n": 7}, "attempts": [], "calls": [call]}
    snap = runs.load("r1")
    for _ in range(2):  # the first engine's transitions lost the race; the service retries
        eng = runs.engine(runs.store.at("r1", snap.head))
        assert record_dispatch(eng, "each", 0, 0, 1) is True  # as the call starts
        assert record_dispatch(eng, "each", 0, 0, 1) is False  # a later runner's walk: once
        record_item(eng, "each", item)
        assert eng.run["flowSpent"] == {"usd": 0.5, "ms": 9, "dispatches": 1}
        (debit,) = [ev for ev in eng.events if ev["type"] == "usage_debit"]
        assert event_violations(debit) == []
        assert debit["detail"]["dispatchId"] == "call-1"
        assert debit["detail"]["item"] == {"itemIndex": 0, "stage": 0, "generation": 1}
        assert "calls" not in eng.run["scope"]["steps"]["each"]["fanout"]["items"][0]
        assert [(ev["type"], ev["detail"]) for ev in eng.events if ev["type"].startswith("fanout_")] == [
            ("fanout_ledger_debit", {"amount": {"dispatches": 1}, "source": "dispatch"}),
            ("fanout_item_dispatched", {"stage": 0, "attempt": 1}),
            ("fanout_ledger_debit", {"amount": {"usd": 0.5, "ms": 9}, "source": "engine"}),
            ("fanout_item_done", {"index": 0, "status": "succeeded", "failure": None}),
        ]


NESTED = """
version: 1
contracts:
  R: {n: integer}
flows:
  entry: main
  child:
    input: {}
    output: {from: "${w.output}", contract: R}
    steps:
      - id: w
        do: "work in the subflow"
        out: R
  main:
    input: {}
    output: {from: "${last.output}", contract: R}
    budget: {usd: 1.0}
    steps:
      - id: sub
        run: child
        with: {}
        budget: {usd: 5.0}
      - id: last
        after: [sub]
        do: "last after ${sub.output.n}"
        out: R
"""


def test_usage_of_a_finished_subflows_step_counts_against_its_run_step_and_the_flow(tmp_path: Path) -> None:
    _ws, runs = planned(tmp_path, NESTED)
    inner = ready_entry(runs, "sub/w")
    runs.done("r1", "sub/w", inner["dispatchToken"], {"output": {"n": 1}})
    assert runs.load("r1").state["scope"]["steps"]["sub"]["status"] == "succeeded"
    runs.usage_report("r1", inner["dispatchId"], {"usd": 2.0})
    state = runs.load("r1").state
    assert state["scope"]["steps"]["sub"]["spent"]["usd"] == 2.0
    assert state["flowSpent"]["usd"] == 2.0
    assert state["status"] == "budget_exhausted"  # the flow ledger is over: the run ends
    (debit,) = _events(runs, "usage_debit")
    assert debit["stepId"] == "sub/w"
