"""The `vivary` front door: the suite's task verbs routed to the command that owns each,
`vivary trust`, `vivary logs`."""
