"""Agent runs that outlive their caller: a record and bounded streams per run under
``.git/vivary/agent-runs/``, a detached runner, poll and cancel (issue 16)."""
