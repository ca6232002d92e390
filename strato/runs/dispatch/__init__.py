"""Work the engine hands to programs: `evaluate` commands and engine-mode fanouts over worktrees."""
