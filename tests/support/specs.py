"""Flow specs that more than one test module plans, each written once: a change to the
flow a test relies on is then a change every test that relies on it sees."""

from __future__ import annotations

_REVIEW = """
version: 1
contracts:
  Draft: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${polish.output}", contract: Draft}
    max_rounds: 2
    BUDGET
    carry:
      notes:
        initial: "${input.topic}"
        on_revise:
          review: "${draft.output.text}"
    steps:
      - id: draft
        do: "Draft ${input.topic}; notes: ${notes}"
        out: Draft
      - id: review
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
      - id: polish
        after: [review]
        do: "Polish ${draft.output.text}"
        out: Draft
"""


def review_spec(budget: str = "") -> str:
    """Draft, a gate that may send it back with the reviewer's notes carried, then polish;
    `budget` is the flow's budget line (none by default)."""
    return _REVIEW.replace("    BUDGET\n", f"    {budget}\n" if budget else "")


_CONSUMER = """
version: 1
contracts:
  Draft: {text: string}
  Score: {score: number}
  Total: {n: integer}
flows:
  entry: main
  main:
    input: {topics: "string[]"}
    output: {from: "${total.output}", contract: Total}
    steps:
      - id: each
        fanout:
          over: "${input.topics}"
          concurrency: 2
          isolation: none
          require: REQUIRE
          merge: sequential
          dispatch: consumer
          steps:
            - do: "Draft ${item}"
              out: Draft
            - do: "Score ${prev.text}"
              out: Score
              WHEN
              ensure:
                - expr: "result.score >= 0.5"
      - id: total
        after: [each]
        set: {n: "len(result.each)"}
        out: Total
"""


def consumer_fanout_spec(require: str = "all", when: str = "") -> str:
    """Draft then score each topic in a fanout the consumer dispatches, then count them;
    `require` is the fanout's rule and `when` an optional condition on the scoring step."""
    condition = f"              when: {when}\n" if when else ""
    return _CONSUMER.replace("REQUIRE", require).replace("              WHEN\n", condition)


# one step whose output a judge must find polite
JUDGED = """
version: 1
contracts:
  A: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${w.output}", contract: A}
    steps:
      - id: w
        do: "write"
        out: A
        attempts: 1
        ensure:
          - judged: {statement: "the text is polite", stakes: cheap}
"""
