"""Spec documents mutated at random (hypothesis): the fuzzers of the validator draw
from the readme fixtures and break them a few keys at a time."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from strato.flow.yamlload import load_yaml

FIXTURES = Path(__file__).parents[1] / "strato" / "flow" / "fixtures"


DOCS = [load_yaml(p.read_text()) for p in sorted(FIXTURES.glob("*.stratum.yaml"))]


NAMES = [
    "a",
    "work",
    "review",
    "main",
    "entry",
    "R",
    "Final",
    "input",
    "item",
    "wave",
    "on_revise",
    "after",
    "do",
    "gate",
    "fanout",
    "run",
    "set",
    "out",
    "with",
    "__proto__",
]


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(NAMES),
    st.sampled_from(
        [
            "${input.text}",
            "${work.output}",
            "${item}",
            "${wave}",
            "${x.output[0]}",
            "${",
            "result.score > 1",
            "string[]",
            "(a|b)[]",
            "Final?",
            "Nope",
        ]
    ),
    st.lists(st.sampled_from(NAMES), max_size=3),
    st.dictionaries(st.sampled_from(NAMES), st.sampled_from([*NAMES, None]), max_size=3),
)


def _containers(node: Any, out: list[Any]) -> list[Any]:
    if isinstance(node, dict | list):
        out.append(node)
        for child in node.values() if isinstance(node, dict) else node:
            _containers(child, out)
    return out


@st.composite
def mutated_specs(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from(DOCS)))
    for _ in range(draw(st.integers(1, 5))):
        target = draw(st.sampled_from(_containers(doc, [])))
        if isinstance(target, dict):
            key = draw(st.sampled_from([*target.keys(), *NAMES])) if target else "x"
            action = draw(st.sampled_from(["set", "delete"]))
            if action == "delete" and key in target:
                del target[key]
            else:
                target[key] = draw(VALUES)
        elif target:
            i = draw(st.integers(0, len(target) - 1))
            action = draw(st.sampled_from(["set", "delete", "duplicate"]))
            if action == "delete":
                del target[i]
            elif action == "duplicate":
                target.append(copy.deepcopy(target[i]))
            else:
                target[i] = draw(VALUES)
    return doc
