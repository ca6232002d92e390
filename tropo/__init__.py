"""tropo: the typed knowledge graph of a Vivary workspace."""

__version__ = "0.1.0"
