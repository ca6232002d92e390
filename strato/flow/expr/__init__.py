"""The flow expression language (`ensure`, `when`, `set`, `iterate.until`): our own
lexer, parser and evaluator over JSON values; never Python's `eval`."""

from strato.flow.expr.ast import parse
from strato.flow.expr.errors import ExprError, ExprErrorKind
from strato.flow.expr.evaluator import evaluate, evaluate_predicate

__all__ = ["ExprError", "ExprErrorKind", "evaluate", "evaluate_predicate", "parse"]
