"""Flow specs: the Stratum v1 language (IR, validation with Stratum's codes, `${...}`
references and the expression language). The flow engine builds on this API; see
docs/flows.md."""

from strato.flow.errors import SpecError
from strato.flow.expr import ExprError, evaluate, evaluate_predicate
from strato.flow.refs import (
    Ref,
    RefSyntaxError,
    Scope,
    Template,
    Unresolved,
    parse_template,
    render,
)
from strato.flow.spec import Spec
from strato.flow.validate import check_entry_input, load_spec, validate_data

__all__ = [
    "ExprError",
    "Ref",
    "RefSyntaxError",
    "Scope",
    "Spec",
    "SpecError",
    "Template",
    "Unresolved",
    "check_entry_input",
    "evaluate",
    "evaluate_predicate",
    "load_spec",
    "parse_template",
    "render",
    "validate_data",
]
