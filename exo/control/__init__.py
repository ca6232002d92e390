"""Governed control: one bounded, caller-owned request in, one typed decision out.

The request envelope is vivary's ``vivary.exo-control-request/v0``; the decisions
are pure functions of the state the request carries (``--from-repo`` fills that state
from the repository instead).
"""
