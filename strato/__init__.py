"""strato: the agent OS of a Vivary workspace."""

__version__ = "0.1.0"
