"""Background runs: the detached runner and the dispatches that outlive it."""
