"""`strato eval`: task sets run through the real engine, their results kept as a commit
chain under `refs/vivary/evals/<id>`, and paired comparisons of two runs (docs/evals.md)."""
