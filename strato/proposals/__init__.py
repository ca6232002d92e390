"""The heartbeat's proposals, below both the heartbeat and distill: a proposal and its
ids, the private sidecar that stages and decides them, and the heartbeat's knobs."""
