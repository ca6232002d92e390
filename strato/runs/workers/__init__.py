"""Workers: one run carried by many clones of a repository through a shared git remote
(docs/runs.md, "Many machines")."""
