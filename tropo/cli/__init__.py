"""The ``tropo`` command line: one click group, its retrieval and review commands
loaded only when named."""
