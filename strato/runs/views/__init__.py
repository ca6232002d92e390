"""How a run looks from outside: the CLI's JSON documents, and Stratum's wire shapes
and events."""
