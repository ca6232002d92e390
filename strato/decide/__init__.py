"""Governed decisions (`strato decide --governed`), compatible with vivary-strato 0.1.x,
plus the capsules and receipts that feed them, produced from our own graph."""

from strato.decide.compile import compile_capsule, graph_fingerprint
from strato.decide.decision import Decision, Refusal, decide
from strato.decide.receipt import build_receipt, verify_receipt

__all__ = [
    "Decision",
    "Refusal",
    "build_receipt",
    "compile_capsule",
    "decide",
    "graph_fingerprint",
    "verify_receipt",
]
