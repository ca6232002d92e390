"""The run state machine: pure operations on a run held as JSON (docs/runs.md)."""
