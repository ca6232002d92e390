"""Hypothesis campaign over the validator: mutated example specs always yield either a
Spec or a list of coded errors, never an exception."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings

from strato.flow.validate import validate_data
from tests.support.spec_mutations import mutated_specs


@settings(max_examples=400, deadline=None)
@given(mutated_specs())
def test_mutated_specs_never_crash_the_validator(doc: Any) -> None:
    spec, errors = validate_data(doc)
    assert (spec is None) == bool(errors)
    for err in errors:
        assert err.code.isupper() and err.message
        json.dumps(err.to_json())
