"""The run commands at a terminal: `strato flow ...` (with the spec commands of
`strato.flow.cli`) and `strato run`."""
