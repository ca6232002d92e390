"""Git hooks that enforce the workspace graph, and their installer."""
